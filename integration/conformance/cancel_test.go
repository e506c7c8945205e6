package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// cancelReturnLimit ends the wait for a call cancelled while the server
// is busy for a second; it is no assertion about speed.
const cancelReturnLimit = 20 * time.Second

// TestCancelWhileServerBusy checks a case of the driver contract that the
// conformance suite does not reach: a ctx that has a deadline (as every
// per-node request of redlock has) and is cancelled before it, while the
// server is busy with another client's script, so that the call's command
// waits in the server's queue. The adapter passes ctx to its client, whose
// choice it is to return at the cancel or to wait for the reply; either
// way the call returns, with an error matching context.Canceled or with
// its own reply, and the Conn's next call gets its own reply, not one left
// unread on a connection by the cancelled call.
func TestCancelWhileServerBusy(t *testing.T) {
	all := adapters.All()
	nodes := redisnode.Start(t, len(all), redisnode.Config{})
	for i, a := range all {
		node := nodes[i]
		t.Run(a.Name, func(t *testing.T) {
			conn := a.Conn(t, node.Addr())
			// Use the Conn first as redlock does, always with a
			// deadline: a client may pick its way of waiting for replies
			// from the first calls.
			warmCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			digest1, err := conn.ScriptLoad(warmCtx, "return 1")
			if err != nil {
				t.Fatalf("warm-up ScriptLoad: %v", err)
			}
			digest2, err := conn.ScriptLoad(warmCtx, "return 2")
			if err != nil {
				t.Fatalf("warm-up ScriptLoad: %v", err)
			}
			if _, err := conn.EvalSha(warmCtx, digest1, []string{"k"}, []string{"v"}); err != nil {
				t.Fatalf("warm-up EvalSha: %v", err)
			}
			calls := []struct {
				name string
				want any
				call func(ctx context.Context, conn driver.Conn) (any, error)
			}{
				{"Eval", int64(1), func(ctx context.Context, conn driver.Conn) (any, error) {
					return conn.Eval(ctx, "return 1", nil, nil)
				}},
				{"EvalSha", int64(1), func(ctx context.Context, conn driver.Conn) (any, error) {
					return conn.EvalSha(ctx, digest1, nil, nil)
				}},
				{"ScriptLoad", digest2, func(ctx context.Context, conn driver.Conn) (any, error) {
					return conn.ScriptLoad(ctx, "return 2")
				}},
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					cancelledWhileBusy(t, node, conn, c.call, c.want)
				})
			}
		})
	}
}

// cancelledWhileBusy makes call through conn with a ctx that is cancelled
// while node is busy, and checks that it returns an error matching
// context.Canceled or want, and that conn's next call gets its own reply.
func cancelledWhileBusy(t *testing.T, node *redisnode.Node, conn driver.Conn, call func(context.Context, driver.Conn) (any, error), want any) {
	t.Helper()
	busyDone := locktest.Busy(t, node, time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	busyAfterCancel := make(chan bool, 1)
	time.AfterFunc(100*time.Millisecond, func() {
		cancel()
		busyAfterCancel <- locktest.IsBusy(node)
	})
	type result struct {
		reply any
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := call(ctx, conn)
		done <- result{reply, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(cancelReturnLimit):
		// The call's goroutine ends when the test's cleanups close
		// the client.
		t.Fatalf("call cancelled while the server was busy for 1s had not returned after %v", cancelReturnLimit)
	}
	if err := <-busyDone; err != nil {
		t.Fatalf("busy script: %v", err)
	}
	if !<-busyAfterCancel {
		t.Fatalf("the server was no longer busy once ctx was cancelled, so the test proves nothing; is the machine overloaded?")
	}
	if r.err != nil && !errors.Is(r.err, context.Canceled) {
		t.Errorf("call cancelled while the server was busy = (%v, %v), want an error matching context.Canceled or (%v, nil)", r.reply, r.err, want)
	}
	if r.err == nil && r.reply != want {
		t.Errorf("call cancelled while the server was busy = (%v, nil), want (%v, nil) or an error matching context.Canceled", r.reply, want)
	}

	next, cancelNext := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelNext()
	got, err := conn.Eval(next, "return 'next'", nil, nil)
	if err != nil || got != "next" {
		t.Errorf("Eval after the cancelled call = (%v, %v), want (next, nil)", got, err)
	}
}
