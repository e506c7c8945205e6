package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
)

// Faults are the hooks with which [Run] puts a Conn's node in the states of
// a gray failure: a node that stalls rather than fails. Give them with
// [WithFaults]. Each rule that needs a hook is skipped, with a reason in the
// test log, when the hook is nil, so an adapter can give the hooks its
// client can be tested with; one that talks to a real Redis server should
// give them all.
//
// The rules check that a call returns, with an error matching ctx.Err(),
// while the node still stalls: a Conn that waits for the stall to end, or
// for a timeout of its client, fails them. A Conn may leave work running
// in the background when it returns early; once the fault ended, a Conn
// that is a [driver.Waiter] must finish it, and Wait return, within 20s.
// Each rule ends its fault before the subtest's cleanups run, so a leak
// check such as go.uber.org/goleak in TestMain finds nothing left of it.
type Faults struct {
	// Pause stops the server that the Conns of newConn talk to, as
	// SIGSTOP does: its connections stay open and its kernel still
	// accepts new ones, but it answers nothing until resume is called.
	// Each rule calls resume once, from the subtest's goroutine, before
	// it ends. Needed by StalledServer and StalledHealthCheck.
	Pause func(t *testing.T) (resume func())

	// HealthChecked returns a Conn to the same server as newConn whose
	// client checks a pooled connection before each use, for example
	// with a PING (a redigo pool's TestOnBorrow). Needed by
	// StalledHealthCheck; leave it nil for a client that has no such
	// check.
	HealthChecked func(t *testing.T) driver.Conn

	// StalledDial returns a Conn whose client cannot finish opening a
	// connection, because the address it dials is a listener whose
	// backlog is full or one that accepts but never answers, and a
	// function that ends the stall (closes that listener). The client is
	// configured as an application would configure it, with its usual
	// dial timeouts. Each rule calls release once, from the subtest's
	// goroutine, before it ends. Needed by StalledDial.
	StalledDial func(t *testing.T) (conn driver.Conn, release func())

	// QuietNotifier returns a Conn to the same server as newConn whose
	// client reads with a short read timeout, a duration several times
	// that timeout, and a function that reports how many connections the
	// client has opened so far. Needed by NotifyQuiet.
	QuietNotifier func(t *testing.T) (conn driver.Conn, quiet time.Duration, dials func() int)
}

// WithFaults gives [Run] the hooks of the rules about stalled nodes; see
// [Faults]. Without it those rules are skipped.
func WithFaults(f Faults) Option {
	return optionFunc(func(c *config) { c.faults = f })
}

const (
	// stallWait ends the wait for a call that does not return when its
	// ctx ends; a Conn that honours ctx returns long before. It is
	// shorter than the 30s connect timeout of several clients, so that a
	// Conn which waits for such a timeout fails the rule.
	stallWait = 20 * time.Second
	// stallCtxLife is how long a call's ctx lives against a stalled node.
	stallCtxLife = 50 * time.Millisecond
)

// returnsWhileStalled calls Eval twice and then EvalSha, the first with a
// ctx that only its deadline can end (adapter.WithTimeout), the second with
// one whose deadline expires and the third with a ctx that is cancelled,
// against a node that stalls, and fails unless each returns within
// stallWait with an error: one matching ctx.Err() when it returns after
// ctx ended, any error when it returns before.
func returnsWhileStalled(t *testing.T, what string, conn driver.Conn) {
	t.Helper()
	calls := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		call func(ctx context.Context) (any, error)
	}{
		// The context locksmith gives the calls of its rounds, which an
		// adapter may run on the calling goroutine (see the driver
		// package's Contexts): only its deadline ends it. It comes
		// first, so that it finds whatever connection the Conn kept
		// from the warm-up's calls with such a context.
		{"Eval with a deadline-only context", func() (context.Context, context.CancelFunc) {
			return adapter.WithTimeout(context.Background(), stallCtxLife)
		}, func(ctx context.Context) (any, error) {
			return conn.Eval(ctx, `return 'answered'`, nil, nil)
		}},
		{"Eval with expiring deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), stallCtxLife)
		}, func(ctx context.Context) (any, error) {
			return conn.Eval(ctx, `return 'answered'`, nil, nil)
		}},
		{"EvalSha with cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			time.AfterFunc(stallCtxLife, cancel)
			return ctx, cancel
		}, func(ctx context.Context) (any, error) {
			return conn.EvalSha(ctx, "0000000000000000000000000000000000000000", nil, nil)
		}},
	}
	for _, c := range calls {
		ctx, cancel := c.ctx()
		type result struct {
			reply any
			err   error
			early bool // returned before ctx ended
		}
		done := make(chan result, 1)
		go func() {
			reply, err := c.call(ctx)
			done <- result{reply, err, ctx.Err() == nil}
		}()
		select {
		case r := <-done:
			switch {
			case r.err == nil:
				t.Errorf("%s, %s = %s, nil; want an error from a node that does not answer", what, c.name, describe(r.reply))
			case r.early:
				// The Conn knew the node failing before ctx ended
				// (a connection it saw break): an error of its own
				// is as good.
				t.Logf("%s, %s: error before ctx ended: %v", what, c.name, r.err)
			case !errors.Is(r.err, ctx.Err()):
				t.Errorf("%s, %s = %s, %v; want an error matching %v", what, c.name, describe(r.reply), r.err, ctx.Err())
			}
		case <-time.After(stallWait):
			// The call's goroutine ends once the fault ends.
			t.Errorf("%s, %s: no return %v after the call started, though its ctx ended after %v", what, c.name, stallWait, stallCtxLife)
		}
		cancel()
	}
}

// answers reports whether Evals through conn get their reply, reporting
// the failure otherwise: after a warm-up, so that the Conn holds a pooled
// connection when a fault begins, and once a fault ended. The first Eval
// has a ctx that a cancel can end; the others have the deadline-only
// context of locksmith's rounds, after which an adapter may keep a
// connection for the next such call.
func answers(t *testing.T, what string, conn driver.Conn) bool {
	t.Helper()
	cancellable := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(t.Context(), stallWait)
	}
	deadlineOnly := func() (context.Context, context.CancelFunc) {
		return adapter.WithTimeout(context.Background(), stallWait)
	}
	ctxs := []func() (context.Context, context.CancelFunc){cancellable, deadlineOnly, deadlineOnly}
	for _, newCtx := range ctxs {
		ctx, cancel := newCtx()
		got, err := conn.Eval(ctx, `return 'answered'`, nil, nil)
		cancel()
		if err != nil || !equalReply(got, "answered") {
			t.Errorf("Eval %s = %s, %v; want %q, nil", what, describe(got), err, "answered")
			return false
		}
	}
	return true
}

// testStalledDial checks that calls return when their ctx ends while the
// client cannot open a connection to the node.
func testStalledDial(t *testing.T, _ func(t *testing.T) driver.Conn, f Faults) {
	if f.StalledDial == nil {
		t.Skip("no Faults.StalledDial hook given")
	}
	conn, release := f.StalledDial(t)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	returnsWhileStalled(t, "dial stalled", conn)
	release()
	released = true
	settles(t, "the dial stall ended", conn)
}

// settles checks that a Conn that is a driver.Waiter finishes, once a
// fault ended, what its calls left running in the background.
func settles(t *testing.T, what string, conn driver.Conn) {
	t.Helper()
	w, ok := conn.(driver.Waiter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), stallWait)
	defer cancel()
	if err := w.Wait(ctx); err != nil {
		t.Errorf("Wait after %s = %v; want the calls left in the background finished within %v", what, err, stallWait)
	}
}

// testStalledServer checks that calls return when their ctx ends while the
// server, reached over connections opened before, has stopped answering,
// and that the Conn works again once the server goes on.
func testStalledServer(t *testing.T, newConn func(t *testing.T) driver.Conn, f Faults) {
	if f.Pause == nil {
		t.Skip("no Faults.Pause hook given")
	}
	conn := newConn(t)
	stalledAndBack(t, "server stopped", conn, f.Pause, false)
}

// testStalledHealthCheck is testStalledServer for a Conn whose client
// checks each pooled connection before it lends it.
func testStalledHealthCheck(t *testing.T, _ func(t *testing.T) driver.Conn, f Faults) {
	if f.Pause == nil || f.HealthChecked == nil {
		t.Skip("no Faults.Pause and Faults.HealthChecked hooks given")
	}
	conn := f.HealthChecked(t)
	stalledAndBack(t, "server stopped, connections checked before use", conn, f.Pause, true)
}

// stalledAndBack warms conn up, pauses the server, checks that calls return
// while it stalls and that conn answers once it goes on. With pooled, a
// Conn that is a driver.Waiter is waited for after the warm-up, so that it
// gives back to its client's pool any connection it kept for its next
// call, and the stalled calls take a pooled connection, which the client
// checks.
func stalledAndBack(t *testing.T, what string, conn driver.Conn, pause func(t *testing.T) func(), pooled bool) {
	t.Helper()
	if !answers(t, "before the fault", conn) {
		return
	}
	if pooled {
		settles(t, "the warm-up", conn)
	}
	resume := pause(t)
	resumed := false
	defer func() {
		if !resumed {
			resume()
		}
	}()
	returnsWhileStalled(t, what, conn)
	resume()
	resumed = true
	settles(t, "the server went on", conn)
	answers(t, "after the node answered again", conn)
}

// testNotifyQuiet checks that a subscription whose channel stays quiet for
// longer than the client's read timeout keeps its connection: the Notifier
// opens no connection while nothing is published, and a message published
// after the quiet spell arrives. The message is published through a Conn
// from newConn: a command sent with the short read timeout fails whenever
// the server is slower than that to answer, which says nothing about the
// subscription.
func testNotifyQuiet(t *testing.T, newConn func(t *testing.T) driver.Conn, f Faults) {
	if f.QuietNotifier == nil {
		t.Skip("no Faults.QuietNotifier hook given")
	}
	conn, quiet, dials := f.QuietNotifier(t)
	n, ok := conn.(driver.Notifier)
	if !ok {
		t.Skip("the Conn does not implement driver.Notifier")
	}
	publisher := newConn(t)
	channel := newChannel("quiet")
	in := newInbox()
	subscribe(t, n, channel, in)
	before := dials()
	time.Sleep(quiet)
	opened := dials() - before
	publish(t, publisher, channel, "after the quiet spell")
	in.await(t, "subscriber of a quiet channel", 1)
	checkPayloads(t, "subscriber of a quiet channel", in.got(), []string{"after the quiet spell"})
	if opened != 0 {
		t.Errorf("the client opened %d connections while the subscribed channel was quiet for %v; want 0 (a read timeout on a quiet channel is no broken connection)", opened, quiet)
	}
}
