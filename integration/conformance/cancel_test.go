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

// TestCancelBeforeDeadlineWhileServerBusy checks a case of the driver
// contract that the conformance suite does not reach: a context that has a
// deadline (as every per-node request of redlock has) and is cancelled
// before it, while the server cannot answer yet. Each method must return
// promptly, while the server is still busy, with an error matching
// context.Canceled: not wait for the reply or the deadline.
func TestCancelBeforeDeadlineWhileServerBusy(t *testing.T) {
	all := adapters.All()
	nodes := redisnode.Start(t, len(all), redisnode.Config{})
	calls := []struct {
		name string
		call func(ctx context.Context, conn driver.Conn) (any, error)
	}{
		{"Eval", func(ctx context.Context, conn driver.Conn) (any, error) {
			return conn.Eval(ctx, "return 1", nil, nil)
		}},
		{"EvalSha", func(ctx context.Context, conn driver.Conn) (any, error) {
			// The digest of "return 1", loaded by the warm-up below.
			return conn.EvalSha(ctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", nil, nil)
		}},
		{"ScriptLoad", func(ctx context.Context, conn driver.Conn) (any, error) {
			return conn.ScriptLoad(ctx, "return 2")
		}},
	}
	for i, a := range all {
		node := nodes[i]
		t.Run(a.Name, func(t *testing.T) {
			conn := a.Conn(t, node.Addr())
			// Use the Conn first as redlock does, always with a
			// deadline: a client may pick its way of waiting for replies
			// from the first calls.
			warmCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if _, err := conn.ScriptLoad(warmCtx, "return 1"); err != nil {
				t.Fatalf("warm-up ScriptLoad: %v", err)
			}
			if _, err := conn.EvalSha(warmCtx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", []string{"k"}, []string{"v"}); err != nil {
				t.Fatalf("warm-up EvalSha: %v", err)
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					busyDone := locktest.Busy(t, node, time.Second)
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					busyAfterCancel := make(chan bool, 1)
					time.AfterFunc(100*time.Millisecond, func() {
						cancel()
						busyAfterCancel <- locktest.IsBusy(node)
					})
					reply, err := c.call(ctx, conn)
					busyAtReturn := locktest.IsBusy(node)
					stillBusy := <-busyAfterCancel
					if err := <-busyDone; err != nil {
						t.Fatalf("busy script: %v", err)
					}
					if !stillBusy {
						t.Fatalf("the server was no longer busy once ctx was cancelled, so the test proves nothing; is the machine overloaded?")
					}
					if !busyAtReturn {
						t.Errorf("%s returned (%v, %v) only after the busy server was free again, though ctx was cancelled while it was busy", c.name, reply, err)
					}
					// The server was busy after the cancellation, so no
					// reply can have arrived before it.
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s cancelled while the server was busy = (%v, %v), want an error matching context.Canceled", c.name, reply, err)
					}
				})
			}
		})
	}
}
