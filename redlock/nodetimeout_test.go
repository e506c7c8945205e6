package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// The node timeout derived from the TTL is 5% of it, but never below 5 ms,
// which a loopback round trip fits in, nor above 1 s, as WithNodeTimeout
// documents. One given with WithNodeTimeout is used as given.
func TestDerivedNodeTimeoutHasAFloorAndACap(t *testing.T) {
	c := newCluster(t, 1)
	derived := c.client(t)
	given := c.client(t, redlock.WithNodeTimeout(time.Millisecond))
	for _, tt := range []struct {
		client *redlock.Client
		ttl    time.Duration
		want   time.Duration
	}{
		{derived, 10 * time.Millisecond, 5 * time.Millisecond},
		{derived, 100 * time.Millisecond, 5 * time.Millisecond},
		{derived, time.Second, 50 * time.Millisecond},
		{derived, time.Minute, time.Second},
		{given, 10 * time.Millisecond, time.Millisecond},
	} {
		got, err := redlock.NodeTimeout(tt.client, tt.ttl)
		if err != nil || got != tt.want {
			t.Errorf("node timeout for ttl %v = %v, %v; want %v", tt.ttl, got, err, tt.want)
		}
	}
}

// A TTL that leaves no validity after the drift allowance and a round that
// waits the whole node timeout for a node can never give a lock while a
// node hangs: it is refused before any node is asked.
func TestTTLLeavingNoValidityAfterTheNodeTimeoutIsRefused(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	_, err := client.TryLock(ctx, "k", 7*time.Millisecond)
	checkInvalid(t, err, "redlock: invalid argument: ttl 7ms leaves no validity after the clock-drift allowance of 2.07ms and the node timeout of 5ms")
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys set by a refused lock", n)
	}
	l := mustLock(t, client, "k", time.Minute)
	checkInvalid(t, l.Extend(ctx, 7*time.Millisecond),
		"redlock: invalid argument: ttl 7ms leaves no validity after the clock-drift allowance of 2.07ms and the node timeout of 5ms")
}

// A node that did not answer in time is reported with the timeout it had.
func TestNodeTimeoutErrorNamesTheTimeout(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	c.setFaults(faults.Pass, faults.Hang, faults.Hang)
	_, err := client.TryLock(context.Background(), "k", 10*time.Millisecond)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNodeTimeout) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired with ErrNodeTimeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock = %v, which matches context.DeadlineExceeded although the caller's ctx has no deadline", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "node 1: node timeout 5ms exceeded") {
		t.Errorf("error %q, want node 1 reported with its timeout, 5ms", msg)
	}
}

// deadlineHonorer is a Conn that says whether its client returns by its
// ctx's deadline (driver.DeadlineHonorer).
type deadlineHonorer struct {
	driver.Conn
	honours bool
}

func (d deadlineHonorer) HonorsDeadline() bool { return d.honours }

// A single node that stalls holds a call no longer than the node timeout:
// a client that ignores its ctx runs on a goroutine of the Client's, which
// the round stops waiting for at the timeout, and one that honours its
// deadline (as its Conn says) runs on the calling goroutine and returns by
// then itself.
func TestStalledSingleNodeEndsAtTheNodeTimeout(t *testing.T) {
	for _, honours := range []bool{false, true} {
		c := newCluster(t, 1)
		g := newGate(c.conns[0], honours)
		client := newGatedClient(t, []driver.Conn{deadlineHonorer{g, honours}}, redlock.WithNodeTimeout(testNodeTimeout))
		_, err := client.TryLock(context.Background(), "k", time.Minute)
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNodeTimeout) {
			t.Errorf("honours %v: TryLock on a stalled node = %v, want ErrNotAcquired with ErrNodeTimeout", honours, err)
		}
		if !honours && g.returned.Load() != 0 {
			t.Errorf("TryLock returned after the call that ignores its ctx did, want it to return at the node timeout")
		}
		close(g.open)
	}
}

// ctxProbe reports, for each EvalSha, whether the caller's cancellation
// reached the call: it cancels the caller's ctx, then looks at its own.
type ctxProbe struct {
	deadlineHonorer
	cancel   context.CancelFunc
	detached chan bool
}

func (p *ctxProbe) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	p.cancel()
	select {
	case p.detached <- ctx.Err() == nil:
	default:
	}
	return p.deadlineHonorer.EvalSha(ctx, sha1, keys, args)
}

// Only a Conn that honours its deadline runs a single node's calls on the
// calling goroutine, with the caller's ctx; the others get a context
// detached from the caller's cancellation.
func TestSingleNodeRunsInlineOnlyWhenItsConnHonoursItsDeadline(t *testing.T) {
	for _, honours := range []bool{false, true} {
		c := newCluster(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		p := &ctxProbe{deadlineHonorer{c.conns[0], honours}, cancel, make(chan bool, 1)}
		client := newGatedClient(t, []driver.Conn{p}, redlock.WithNodeTimeout(testNodeTimeout))
		_, _ = client.TryLock(ctx, "k", time.Minute)
		if detached := <-p.detached; detached == honours {
			t.Errorf("honours %v: the call's ctx detached from the caller's %v, want %v", honours, detached, !honours)
		}
	}
}

// cancelMidCall is a Conn whose client honours its deadline but not a
// cancellation, as go-redis with ContextTimeoutEnabled does: each EvalSha
// cancels the caller's ctx, then runs to its reply.
type cancelMidCall struct {
	deadlineHonorer
	cancel context.CancelFunc
}

func (c cancelMidCall) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	c.cancel()
	deadline, _ := ctx.Deadline()
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	return c.deadlineHonorer.EvalSha(ctx, sha1, keys, args)
}

// A caller that cancels its ctx while an inline call runs gets no lock,
// even though the node granted it: the reply came after the caller gave
// up, when a round on goroutines would have returned without it, so the
// attempt fails with the caller's ctx.Err() and is released.
func TestInlineCallCancelledByTheCallerGrantsNothing(t *testing.T) {
	c := newCluster(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	conn := cancelMidCall{deadlineHonorer{c.conns[0], true}, cancel}
	client := newGatedClient(t, []driver.Conn{conn}, redlock.WithNodeTimeout(testNodeTimeout))
	l, err := client.TryLock(ctx, "k", time.Minute)
	if err == nil {
		t.Fatalf("TryLock cancelled during its inline call = a lock valid until %v, want an error", l.ValidUntil())
	}
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Errorf("TryLock cancelled during its inline call = %v, want ErrNotAcquired and context.Canceled", err)
	}
	settle(t, client)
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left on the node after the cancelled TryLock, want 0", n)
	}
}
