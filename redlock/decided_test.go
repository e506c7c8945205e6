package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
)

// gate is a Conn whose calls wait until open is called before they reach
// the node: a node that is slow rather than dead. With honourCtx false it
// also ignores the calls' contexts, as a faulty adapter might.
type gate struct {
	driver.Conn
	open      chan struct{}
	honourCtx bool
	entered   atomic.Int32 // calls that reached the gate
	returned  atomic.Int32 // calls that have returned
}

// waitEntered blocks until n calls have reached the gate: a round that
// returned early may not yet have run its goroutine for the gated node.
func (g *gate) waitEntered(n int32) {
	for g.entered.Load() < n {
		time.Sleep(time.Millisecond)
	}
}

func newGate(next driver.Conn, honourCtx bool) *gate {
	return &gate{Conn: next, open: make(chan struct{}), honourCtx: honourCtx}
}

func (g *gate) pass(ctx context.Context) error {
	if !g.honourCtx {
		<-g.open
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	g.entered.Add(1)
	defer g.returned.Add(1)
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	return g.Conn.Eval(ctx, script, keys, args)
}

func (g *gate) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	g.entered.Add(1)
	defer g.returned.Add(1)
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	return g.Conn.EvalSha(ctx, sha1, keys, args)
}

// gated returns the cluster's conns with the last one behind a gate.
func gated(c *cluster, honourCtx bool) ([]driver.Conn, *gate) {
	conns := append([]driver.Conn(nil), c.conns...)
	g := newGate(conns[len(conns)-1], honourCtx)
	conns[len(conns)-1] = g
	return conns, g
}

func newGatedClient(t *testing.T, conns []driver.Conn, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	client, err := redlock.New(conns, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { closeClient(t, client) })
	return client
}

// A call returns once a quorum has decided it, not when the slowest node
// answers; the stalled node's requests stay in the order they were made,
// so its late grant, extension and release leave no key behind.
func TestRoundsReturnOnceAQuorumDecides(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := "plain"
		opts := []redlock.Option{redlock.WithNodeTimeout(30 * time.Second)}
		if fenced {
			name = "fenced"
			opts = append(opts, redlock.WithFencing())
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 5)
			conns, g := gated(c, true)
			client := newGatedClient(t, conns, opts...)
			ctx := context.Background()

			l, err := client.Lock(ctx, "k", time.Minute)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if g.returned.Load() != 0 {
				t.Fatalf("Lock returned after the stalled node's request ended; want it to return once a quorum granted")
			}
			g.waitEntered(1)
			if err := l.Extend(ctx, 2*time.Minute); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if n := g.entered.Load(); n != 1 || g.returned.Load() != 0 {
				t.Fatalf("%d requests reached the stalled node's adapter, want 1 still there: later requests of the lock wait for earlier ones", n)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := client.Close(cancelled); !errors.Is(err, context.Canceled) {
				t.Fatalf("Close with a cancelled ctx while a request runs = %v, want context.Canceled", err)
			}

			close(g.open)
			settle(t, client)
			if c.servers[4].Exists("k") {
				t.Errorf("stalled node holds k after its requests ended: the release must follow the late grant")
			}
		})
	}
}

// An attempt that a quorum refused returns at once; a grant that the
// stalled node gives after that is released.
func TestRefusedAttemptReleasesALateGrant(t *testing.T) {
	c := newCluster(t, 3)
	conns, g := gated(c, true)
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(30*time.Second))
	for _, s := range c.servers[:2] {
		if err := s.Set("k", "another owner"); err != nil {
			t.Fatal(err)
		}
	}

	_, err := client.TryLock(context.Background(), "k", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock on a key held on 2 of 3 nodes = %v, want ErrNotAcquired", err)
	}
	if g.returned.Load() != 0 {
		t.Fatalf("TryLock returned after the stalled node's request ended; want it to return once a quorum refused")
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Refused != 2 {
		t.Fatalf("error %v, want a *QuorumError with 2 refusals", err)
	}

	close(g.open)
	settle(t, client)
	if c.servers[2].Exists("k") {
		t.Errorf("stalled node holds k after the refused attempt, want its late grant released")
	}
}

// A round that the answers cannot decide ends at the per-node timeout,
// even when an adapter ignores its context and never returns by itself.
func TestRoundEndsAtTheNodeTimeoutWhenAnAdapterIgnoresContext(t *testing.T) {
	c := newCluster(t, 3)
	conns, g := gated(c, false)
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(testNodeTimeout))
	defer close(g.open) // before settle, which the cleanup runs

	// Two nodes grant: decided without the stuck node.
	l, err := client.TryLock(context.Background(), "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	// One node refuses and one is stuck: only the timeout decides.
	if err := c.servers[1].Set("j", "another owner"); err != nil {
		t.Fatal(err)
	}
	_, err = client.TryLock(context.Background(), "j", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with one node refusing and one stuck = %v, want ErrNotAcquired", err)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || len(qe.Errors) != 1 || qe.Errors[0].Node != 2 || !errors.Is(qe.Errors[0].Err, redlock.ErrNodeTimeout) {
		t.Fatalf("error %v, want node 2 reported as timed out", err)
	}
	if n := g.returned.Load(); n != 0 {
		t.Fatalf("%d calls returned from the stuck adapter, want 0: the rounds must not wait for it", n)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// A refused attempt returns once the nodes that answered it have answered
// its release; a node that did not answer within the node timeout is not
// waited for a second time. Here the round ends at the node timeout with
// one grant, one refusal and node 2 timed out: TryLock returns while node
// 2's release, which follows its timed-out acquire, still waits in the
// adapter (for up to another node timeout, 5 s).
func TestRefusedAttemptDoesNotWaitForATimedOutNode(t *testing.T) {
	c := newCluster(t, 3)
	conns, g := gated(c, true)
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(5*time.Second), redlock.WithRetryStrategy(redlock.NoRetry()))
	if err := c.servers[1].Set("k", "another owner"); err != nil {
		t.Fatal(err)
	}
	_, err := client.TryLock(context.Background(), "k", time.Minute)
	entered, returned := g.entered.Load(), g.returned.Load()
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 1 of 3 nodes granting = %v, want ErrNotAcquired", err)
	}
	if returned != 1 {
		t.Errorf("TryLock returned once %d of node 2's requests had returned (%d reached it), want 1: the timed-out acquire, not its release", returned, entered)
	}
	close(g.open)
	settle(t, client)
	for i, s := range c.servers {
		if i != 1 && s.Exists("k") {
			t.Errorf("node %d holds k after the refused attempt's release", i)
		}
	}
}

// A request that its client does not end at its deadline ends for the
// round at the per-node timeout, but the Client still counts it: Close
// waits for it to return, and returns ctx.Err() while it runs. Close also
// releases the lock still held, and every call after it fails.
func TestCloseWaitsForARequestPastItsDeadline(t *testing.T) {
	c := newCluster(t, 3)
	conns, g := gated(c, false)
	// Opened below; also on a t.Fatalf, so that no call stays blocked.
	open := sync.OnceFunc(func() { close(g.open) })
	defer open()
	client, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// A bound for the waits below, far above the node timeout: past it,
	// a Close is taken to hang.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock with two of three nodes answering = %v, want a grant", err)
	}
	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	if err := client.Close(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a cancelled ctx while node 2's client call blocks = %v, want context.Canceled", err)
	}
	if n := g.returned.Load(); n != 0 {
		t.Fatalf("%d calls returned from the gated client before it opened, want 0", n)
	}
	open()
	if err := client.Close(ctx); err != nil {
		t.Errorf("Close once the client's calls can return = %v, want nil", err)
	}
	if entered, returned := g.entered.Load(), g.returned.Load(); entered != returned {
		t.Errorf("Close returned with %d of node 2's %d calls still running", entered-returned, entered)
	}
	for i, s := range c.servers {
		if s.Exists("k") {
			t.Errorf("node %d holds k after Close, want the lock released", i)
		}
	}
	if _, err := client.TryLock(ctx, "j", time.Minute); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("TryLock after Close = %v, want ErrClosed", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Unlock after Close = %v, want ErrClosed", err)
	}
}
