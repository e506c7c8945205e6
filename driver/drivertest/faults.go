package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// Faults are the hooks with which [Run] puts a Conn's node in the states of
// a gray failure: a node that stalls rather than fails. Give them with
// [WithFaults]. Each rule that needs a hook is skipped, with a reason in the
// test log, when the hook is nil; an adapter over a real Redis server
// should give every hook its client can be tested with. Each rule ends its
// fault before the subtest's cleanups run, so a leak check such as
// go.uber.org/goleak in TestMain finds nothing left of it.
type Faults struct {
	// Pause stops the server that the Conns of newConn talk to, as
	// SIGSTOP does: its connections stay open and its kernel still
	// accepts new ones, but it answers nothing until resume is called,
	// once, from the subtest's goroutine. Needed by StalledServer,
	// StalledHealthCheck and HonorsDeadline.
	Pause func(t *testing.T) (resume func())

	// HealthChecked returns a Conn to the same server as newConn whose
	// client checks a pooled connection before each use, for example
	// with a PING (a redigo pool's TestOnBorrow). Needed by
	// StalledHealthCheck; leave it nil for a client without such a check.
	HealthChecked func(t *testing.T) driver.Conn

	// StalledDial returns a Conn whose client, configured with its usual
	// dial timeouts, cannot finish opening a connection (the address it
	// dials is a listener whose backlog is full, or one that accepts but
	// never answers), and a function that ends the stall, called once
	// from the subtest's goroutine. Needed by StalledDial.
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
	// stallWait ends the wait for a call against a stalled node. It is
	// shorter than the 30s connect timeout of several clients, so that a
	// Conn which waits for such a timeout fails the rule.
	stallWait = 20 * time.Second
	// deadlineSlack is how long after its ctx's deadline a call of a Conn
	// that honours deadlines may return: the point is that it returns.
	deadlineSlack = time.Second
	// stallCtxLife is how long a call's ctx lives against a stalled node.
	stallCtxLife = 50 * time.Millisecond
	// unknownDigest is the digest of a script no server has.
	unknownDigest = "0000000000000000000000000000000000000000"
)

// A call is one method of a Conn with fixed arguments.
type call struct {
	method string
	run    func(ctx context.Context) (any, error)
}

// calls returns the three methods of conn, EvalSha of digest.
func calls(conn driver.Conn, digest string) []call {
	return []call{
		{"Eval", func(ctx context.Context) (any, error) { return conn.Eval(ctx, `return 'answered'`, nil, nil) }},
		{"EvalSha", func(ctx context.Context) (any, error) { return conn.EvalSha(ctx, digest, nil, nil) }},
		{"ScriptLoad", func(ctx context.Context) (any, error) { return conn.ScriptLoad(ctx, `return 'answered'`) }},
	}
}

// expiring returns a ctx whose deadline expires after stallCtxLife.
func expiring() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), stallCtxLife)
}

// cancelled returns a ctx that is cancelled after stallCtxLife.
func cancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	time.AfterFunc(stallCtxLife, cancel)
	return ctx, cancel
}

// returnsWhileStalled calls Eval with a ctx whose deadline expires and
// EvalSha with a ctx that is cancelled, against a node that stalls, and
// fails unless each returns an error within stallWait; a call with a
// deadline through a Conn whose HonorsDeadline reports true, within
// deadlineSlack of that deadline.
func returnsWhileStalled(t *testing.T, what string, conn driver.Conn) {
	t.Helper()
	methods := calls(conn, unknownDigest)
	limit := stallWait
	if honorsDeadline(conn) {
		limit = stallCtxLife + deadlineSlack
	}
	if err := callReturns(what+", Eval with expiring deadline", limit, expiring, methods[0].run); err != nil {
		t.Error(err)
	}
	if err := callReturns(what+", EvalSha with cancel", stallWait, cancelled, methods[1].run); err != nil {
		t.Error(err)
	}
}

// honorsDeadline reports whether conn says that its calls return by their
// ctx's deadline.
func honorsDeadline(conn driver.Conn) bool {
	h, ok := conn.(driver.DeadlineHonorer)
	return ok && h.HonorsDeadline()
}

// callReturns makes one call with a ctx from newCtx and reports a failure
// unless the call returns an error within limit of its start.
func callReturns(what string, limit time.Duration, newCtx func() (context.Context, context.CancelFunc), call func(ctx context.Context) (any, error)) error {
	ctx, cancel := newCtx()
	defer cancel()
	type result struct {
		reply any
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := call(ctx)
		done <- result{reply, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			return fmt.Errorf("%s = %s, nil; want an error from a node that does not answer", what, describe(r.reply))
		}
		return nil
	case <-timer.C:
		// The call's goroutine ends once the fault ends.
		return fmt.Errorf("%s: no return %v after the call started", what, limit)
	}
}

// answers reports whether Evals through conn get their reply, reporting
// the failure otherwise: after a warm-up, so that the Conn's client holds
// pooled connections when a fault begins, and once a fault ended.
func answers(t *testing.T, what string, conn driver.Conn) bool {
	t.Helper()
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), stallWait)
		got, err := conn.Eval(ctx, `return 'answered'`, nil, nil)
		cancel()
		if err != nil || !equalReply(got, "answered") {
			t.Errorf("Eval %s = %s, %v; want %q, nil", what, describe(got), err, "answered")
			return false
		}
	}
	return true
}

func testStalledDial(t *testing.T, _ func(t *testing.T) driver.Conn, cfg config) {
	f := cfg.faults
	if f.StalledDial == nil {
		t.Skip("no Faults.StalledDial hook given")
	}
	conn, release := f.StalledDial(t)
	defer release()
	returnsWhileStalled(t, "dial stalled", conn)
}

func testStalledServer(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	f := cfg.faults
	if f.Pause == nil {
		t.Skip("no Faults.Pause hook given")
	}
	stalledAndBack(t, "server stopped", newConn(t), f.Pause)
}

func testStalledHealthCheck(t *testing.T, _ func(t *testing.T) driver.Conn, cfg config) {
	f := cfg.faults
	if f.Pause == nil || f.HealthChecked == nil {
		t.Skip("no Faults.Pause and Faults.HealthChecked hooks given")
	}
	stalledAndBack(t, "server stopped, connections checked before use", f.HealthChecked(t), f.Pause)
}

// stalledAndBack warms conn up, pauses the server, checks that calls return
// while it stalls and that conn answers once it goes on.
func stalledAndBack(t *testing.T, what string, conn driver.Conn, pause func(t *testing.T) func()) {
	t.Helper()
	if !answers(t, "before the fault", conn) {
		return
	}
	resume := pause(t)
	returnsWhileStalled(t, what, conn)
	resume()
	answers(t, "after the node answered again", conn)
}

// testHonorsDeadline checks that a Conn whose HonorsDeadline reports true
// returns from each method within deadlineSlack of its ctx's deadline
// while the server, reached over connections opened before, has stopped
// answering.
func testHonorsDeadline(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	f := cfg.faults
	conn := newConn(t)
	if !honorsDeadline(conn) {
		t.Skip("the Conn does not report that it honours deadlines (driver.DeadlineHonorer)")
	}
	if f.Pause == nil {
		t.Skip("no Faults.Pause hook given")
	}
	if !answers(t, "before the fault", conn) {
		return
	}
	defer f.Pause(t)()
	for _, c := range calls(conn, unknownDigest) {
		if err := callReturns("server stopped, "+c.method+" with expiring deadline", stallCtxLife+deadlineSlack, expiring, c.run); err != nil {
			t.Error(err)
		}
	}
}

// testNotifyQuiet publishes through a Conn from newConn: a command sent
// with the short read timeout fails whenever the server is slower than
// that to answer, which says nothing about the subscription.
func testNotifyQuiet(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	f := cfg.faults
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
