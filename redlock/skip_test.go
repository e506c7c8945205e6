package redlock_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// keyRecorder is a Conn that records the first key of every script call
// that reaches it.
type keyRecorder struct {
	driver.Conn
	mu   sync.Mutex
	keys []string
}

func (r *keyRecorder) record(keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, keys[0])
}

func (r *keyRecorder) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	r.record(keys)
	return r.Conn.Eval(ctx, script, keys, args)
}

func (r *keyRecorder) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	r.record(keys)
	return r.Conn.EvalSha(ctx, sha1, keys, args)
}

// calls returns how many recorded calls were for the lock key of name.
func (r *keyRecorder) calls(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.keys {
		if strings.HasSuffix(k, name) {
			n++
		}
	}
	return n
}

// A node whose request is still running a tenth of the node timeout
// after its round returned is behind: new locks do not send it their
// acquire, nor their extends and releases, until it has caught up, while
// the lock whose request it holds goes on as usual. With
// WithSkipUnhealthyNodes(false) every request is sent.
func TestAcquireSkipsANodeBehind(t *testing.T) {
	for _, skip := range []bool{true, false} {
		name := "skip"
		if !skip {
			name = "send every request"
		}
		t.Run(name, func(t *testing.T) {
			const nodeTimeout = 40 * time.Second
			c := newCluster(t, 5)
			conns := append([]driver.Conn(nil), c.conns...)
			rec := &keyRecorder{Conn: conns[4]}
			g := newGate(rec, true)
			conns[4] = g
			client, err := redlock.New(conns, redlock.WithNodeTimeout(nodeTimeout), redlock.WithSkipUnhealthyNodes(skip))
			if err != nil {
				t.Fatal(err)
			}
			clock := faults.NewClock(time.Unix(1_000_000, 0))
			redlock.SetHealthClock(client, clock.Now)
			ctx := context.Background()

			// The stalled node holds a's acquire past its round.
			a, err := client.Lock(ctx, "a", time.Minute)
			if err != nil {
				t.Fatalf("Lock(a): %v", err)
			}
			g.waitEntered(1)
			clock.Advance(nodeTimeout / 10)
			// Exactly a tenth of the node timeout late: not yet behind.
			b := mustLockNoSettle(t, client, "b")
			clock.Advance(time.Millisecond)
			// Now behind, for c and d.
			l := mustLockNoSettle(t, client, "c")
			if err := l.Extend(ctx, 2*time.Minute); err != nil {
				t.Fatalf("Extend(c): %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock(c): %v", err)
			}
			if skip {
				// d's extend is refused on 2 nodes and granted on 2: the
				// round is decided only because node 4 is not sent to,
				// which the error reports. (Sent, the extend would wait
				// for the stalled node.)
				d := mustLockNoSettle(t, client, "d")
				for _, s := range c.servers[:2] {
					if err := s.Set(d.Key(), "another owner"); err != nil {
						t.Fatal(err)
					}
				}
				err := d.Extend(ctx, time.Minute)
				var qe *redlock.QuorumError
				if !errors.As(err, &qe) {
					t.Fatalf("Extend(d) with d taken on 2 nodes = %v, want a *QuorumError", err)
				}
				notSent := false
				for _, ne := range qe.Errors {
					notSent = notSent || ne.Node == 4 && errors.Is(ne, redlock.ErrNodeSkipped)
				}
				if !notSent {
					t.Errorf("Extend(d): %v; want node 4 reported as not sent (ErrNodeSkipped)", err)
				}
				if want := "; node 4: not sent: the lock was acquired without this node"; !strings.HasSuffix(err.Error(), want) {
					t.Errorf("Extend(d): %q; want it ending in %q", err, want)
				}
				// A new lock on d's key skips node 4 as behind, and says so.
				_, err = client.TryLock(ctx, "d", time.Minute)
				if want := `; node 4: skipped, behind the other nodes \([0-9]+ requests? still running\)$`; !regexp.MustCompile(want).MatchString(err.Error()) {
					t.Errorf("TryLock(d) while node 4 is behind: %v; want it matching %q", err, want)
				}
			}
			if err := a.Unlock(ctx); err != nil {
				t.Fatalf("Unlock(a): %v", err)
			}
			if err := b.Unlock(ctx); err != nil {
				t.Fatalf("Unlock(b): %v", err)
			}

			close(g.open)
			settle(t, client)
			// Caught up: the next lock is sent to node 4 again.
			e := mustLock(t, client, "e", time.Minute)
			if !c.servers[4].Exists("e") {
				t.Error("node 4 does not hold e: the acquire after it caught up was not sent")
			}
			if err := e.Unlock(ctx); err != nil {
				t.Fatalf("Unlock(e): %v", err)
			}
			settle(t, client)

			// Each lock's acquire, extends and release.
			want := map[string]int{"a": 2, "b": 2, "c": 3, "e": 2}
			if skip {
				want["c"], want["d"] = 0, 0
			}
			for name, n := range want {
				if got := rec.calls(name); got != n {
					t.Errorf("node 4 got %d requests of lock %s, want %d", got, name, n)
				}
			}
			for _, name := range []string{"a", "b", "c", "d", "e"} {
				if name != "d" && c.servers[4].Exists(name) {
					t.Errorf("node 4 still holds %s", name)
				}
			}
		})
	}
}

// mustLockNoSettle acquires name for a minute or fails the test; unlike
// mustLock it does not wait for the requests of the round to end.
func mustLockNoSettle(t *testing.T, client *redlock.Client, name string) *redlock.Lock {
	t.Helper()
	l, err := client.Lock(context.Background(), name, time.Minute)
	if err != nil {
		t.Fatalf("Lock(%s): %v", name, err)
	}
	return l
}

// takeOver makes another owner hold the key of l: nodes 0 and 1 forget l
// (a restart without persistence, say) and another Client, which skips no
// node, takes the key on them and on node 4, which l's acquire skipped.
func takeOver(t *testing.T, c *cluster, l *redlock.Lock) {
	t.Helper()
	for _, s := range c.servers[:2] {
		s.Del(l.Key())
	}
	other := c.client(t)
	o, err := other.TryLock(context.Background(), l.Key(), time.Minute)
	if err != nil {
		t.Fatalf("other TryLock: %v", err)
	}
	settle(t, other)
	t.Cleanup(func() { o.Unlock(context.Background()) })
}

// A lock acquired without a node cannot be held there: when two of the
// other four refuse an extend, no quorum can hold the lock any more, as
// when three of five refuse, so ValidUntil drops to the round's start.
func TestExtendCountsASkippedNodeAsNotHolding(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t, redlock.SkipNodes([]bool{false, false, false, false, true}))
	l := mustLock(t, client, "k", time.Minute)
	takeOver(t, c, l)
	err := l.Extend(context.Background(), time.Minute)
	returned := time.Now()
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend of a lock another owner took = %v, want ErrNotHeld", err)
	}
	if until := l.ValidUntil(); !until.Before(returned) {
		t.Errorf("ValidUntil is %v after the extend that found the lock gone returned, want it at that extend's start", until.Sub(returned))
	}
}

// The same for renewal: the first renewal round finds the lock lost and
// lowers ValidUntil to its start, so the KeepAlive context closes then,
// rather than at the loss margin after renewals that kept failing. The
// renewal is due 0.6s after the lock was acquired and the loss margin
// 59.4s, so however slow the machine, a renewal round runs first. (Which
// of the two reports the loss, the round or the loss timer that the
// lowered validity re-arms, does not matter.)
func TestRenewalCountsASkippedNodeAsNotHolding(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t, redlock.SkipNodes([]bool{false, false, false, false, true}), redlock.WithRenewal(0.99, 0.01))
	l := mustLock(t, client, "k", time.Minute)
	takeOver(t, c, l)
	ctx, stop := l.KeepAlive(context.Background())
	defer stop()
	<-ctx.Done()
	closed := time.Now()
	if cause := context.Cause(ctx); !errors.Is(cause, redlock.ErrLockLost) {
		t.Fatalf("KeepAlive context's cause %v, want ErrLockLost", cause)
	}
	if until := l.ValidUntil(); until.After(closed) {
		t.Errorf("ValidUntil is %v after the KeepAlive context closed: the loss was found at the loss margin, want it found by the first renewal round", until.Sub(closed))
	}
}

// A node whose last 3 requests failed is failing: new locks do not send it
// their acquire, nor their extends and releases, except for one probe per
// node timeout after its last failure, and a probe that succeeds ends it.
// With WithSkipUnhealthyNodes(false) every request is sent.
func TestAcquireSkipsAFailingNode(t *testing.T) {
	for _, skip := range []bool{true, false} {
		name := "skip"
		if !skip {
			name = "send every request"
		}
		t.Run(name, func(t *testing.T) {
			const nodeTimeout = time.Second
			c := newCluster(t, 5)
			conns := append([]driver.Conn(nil), c.conns...)
			rec := &keyRecorder{Conn: c.faults[4]}
			conns[4] = rec
			client, clock := newClockedClient(t, conns, redlock.WithNodeTimeout(nodeTimeout), redlock.WithSkipUnhealthyNodes(skip))
			ctx := context.Background()
			c.faults[4].Set(faults.Fail)
			// requests runs the acquire, an extend and the release of lock
			// name and returns how many script calls of it reached node 4.
			requests := func(name string) int {
				t.Helper()
				l := mustLock(t, client, name, time.Minute)
				if err := l.Extend(ctx, time.Minute); err != nil {
					t.Fatalf("Extend(%s): %v", name, err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatalf("Unlock(%s): %v", name, err)
				}
				settle(t, client)
				return rec.calls(name)
			}
			sent := func(n int) int {
				if skip {
					return n
				}
				return 3
			}

			// a's acquire, extend and release fail: node 4 is failing.
			if got := requests("a"); got != 3 {
				t.Fatalf("node 4 got %d requests of lock a, want 3", got)
			}
			if got, want := requests("b"), sent(0); got != want {
				t.Errorf("node 4, failing, got %d requests of lock b, want %d", got, want)
			}
			clock.Advance(nodeTimeout)
			if got, want := requests("c"), sent(0); got != want {
				t.Errorf("node 4 got %d requests of lock c, one node timeout after its last failure, want %d", got, want)
			}
			clock.Advance(time.Millisecond)
			// d's acquire is the probe, which fails; so do d's extend and
			// release, which follow it.
			if got, want := requests("d"), sent(3); got != want {
				t.Errorf("node 4 got %d requests of lock d, the probe, want %d", got, want)
			}
			if got, want := requests("e"), sent(0); got != want {
				t.Errorf("node 4 got %d requests of lock e, after a failed probe, want %d", got, want)
			}
			c.faults[4].Set(faults.Pass)
			clock.Advance(nodeTimeout + time.Millisecond)
			g := mustLock(t, client, "g", time.Minute)
			if !c.servers[4].Exists(g.Key()) {
				t.Error("node 4 does not hold g: the probe after it recovered was not sent")
			}
			if err := g.Unlock(ctx); err != nil {
				t.Fatalf("Unlock(g): %v", err)
			}
			// The probe succeeded: node 4 is no longer failing.
			if got := requests("h"); got != 3 {
				t.Errorf("node 4 got %d requests of lock h, after a probe succeeded, want 3", got)
			}
		})
	}
}

// A request over keys that may lie in different hash slots goes to every
// node, failing or not: a Cluster node's CROSSSLOT refusal fails such a
// LockMulti with ErrInvalidArgument even while the node is failing.
func TestCrossSlotIsRefusedWhateverTheNodesHealth(t *testing.T) {
	c := newCluster(t, 3)
	cn := &clusterNode{Conn: c.conns[2]}
	client, err := redlock.New([]driver.Conn{c.conns[0], c.conns[1], cn},
		redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { settle(t, client) })
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	redlock.SetHealthClock(client, clock.Now)
	// Node 2 fails the acquire and the release of x and the acquire of
	// y: it is failing, and y's release is not sent to it.
	c.faults[2].Set(faults.Fail)
	for _, name := range []string{"x", "y"} {
		l := mustLock(t, client, name, time.Minute)
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock(%s): %v", name, err)
		}
		settle(t, client)
	}
	c.faults[2].Set(faults.Pass)
	l, err := client.LockMulti(context.Background(), []string{"a", "b"}, time.Minute)
	settle(t, client)
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("LockMulti over keys in different slots, node 2 failing = %v (lock %v), want ErrInvalidArgument; node 2 refused %d",
			err, l != nil, cn.refused.Load())
	}
}

// CROSSSLOT refusals are the caller's mistake, not the nodes' failures:
// after them, a valid lock is sent to every node. Nor is a failed
// attempt's release refused with CROSSSLOT sent again, as a release that
// failed would be: the node set nothing, and would refuse it again.
func TestCrossSlotRefusalsDoNotMakeNodesFailing(t *testing.T) {
	c := newCluster(t, 3)
	nodes := make([]*clusterNode, 3)
	conns := make([]driver.Conn, 3)
	for i := range conns {
		nodes[i] = &clusterNode{Conn: c.conns[i]}
		conns[i] = nodes[i]
	}
	client, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { settle(t, client) })
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	redlock.SetHealthClock(client, clock.Now)
	for range 3 {
		if _, err := client.LockMulti(context.Background(), []string{"a", "b"}, time.Minute); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Fatalf("LockMulti = %v, want ErrInvalidArgument", err)
		}
		settle(t, client)
	}
	for i, n := range nodes {
		if got := n.refused.Load(); got != 6 {
			t.Errorf("node %d refused %d requests with CROSSSLOT, want 6: each attempt's acquire and one release", i, got)
		}
	}
	l := mustLock(t, client, "x", time.Minute)
	defer l.Unlock(context.Background())
	for i, s := range c.servers {
		if !s.Exists(l.Key()) {
			t.Errorf("node %d does not hold x: skipped after the caller's CROSSSLOT mistakes", i)
		}
	}
}

// No more nodes are skipped than leave a quorum: with three of five
// failing, an acquire skips two of them and is sent to the third.
func TestAtMostTheSpareNodesAreSkipped(t *testing.T) {
	c := newCluster(t, 5)
	conns := append([]driver.Conn(nil), c.conns...)
	recs := make([]*keyRecorder, 5)
	for i := 2; i < 5; i++ {
		recs[i] = &keyRecorder{Conn: c.faults[i]}
		conns[i] = recs[i]
		c.faults[i].Set(faults.Fail)
	}
	client, err := redlock.New(conns, redlock.WithNodeTimeout(time.Second), redlock.WithRetryStrategy(redlock.NoRetry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { settle(t, client) })
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	redlock.SetHealthClock(client, clock.Now)
	// Each refused attempt fails its acquire and its release on nodes 2
	// to 4; after two of them, all three are failing.
	for _, name := range []string{"a", "b", "c"} {
		if _, err := client.Lock(context.Background(), name, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("Lock(%s) with 3 of 5 nodes failing = %v, want ErrNotAcquired", name, err)
		}
		settle(t, client)
	}
	sent := 0
	for i := 2; i < 5; i++ {
		sent += recs[i].calls("c")
	}
	// c's acquire and release reach one failing node, 2 requests.
	if sent != 2 {
		t.Errorf("the failing nodes got %d requests of c, want 2: one node's acquire and release", sent)
	}
}

// The spare skips go to failing nodes before nodes behind: with nodes 3
// and 4 failing and node 0 behind, node 0 is still sent the acquire, and
// nodes 0 to 2 grant it. Skipped in node order, node 0 and node 3 would
// be skipped and node 4's failure would refuse the lock.
func TestFailingNodesAreSkippedBeforeNodesBehind(t *testing.T) {
	const nodeTimeout = 40 * time.Second
	c := newCluster(t, 5)
	client, clock := newClockedClient(t, c.conns, redlock.WithNodeTimeout(nodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()))
	ctx := context.Background()

	// Node 0 holds a's acquire past a tenth of the node timeout after
	// its round: behind, until the test ends.
	release := blockCall(c.faults[0])
	defer release()
	mustLockNoSettle(t, client, "a")
	// The other nodes' requests of a may have outlived its round too:
	// once they have ended, only node 0 is behind.
	for node := 1; node < 5; node++ {
		for deadline := time.Now().Add(10 * time.Second); redlock.Stragglers(client, node) > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d's request of a still running after 10 s", node)
			}
		}
	}
	clock.Advance(nodeTimeout/10 + time.Millisecond)

	// Nodes 3 and 4 fail the acquires and the releases of two attempts,
	// which node 0's skip leaves to nodes 1 and 2: failing, and not due a
	// probe while the clock stands still.
	c.faults[3].Set(faults.Fail)
	c.faults[4].Set(faults.Fail)
	mustNotAcquire(t, client, "b", "c")
	if _, err := client.TryLock(ctx, "fresh", time.Minute); err != nil {
		t.Errorf("TryLock with nodes 1 and 2 healthy, node 0 behind and nodes 3 and 4 failing: %v", err)
	}
}

// newClockedClient returns a Client over conns whose node health follows
// a fake clock, settled when the test ends.
func newClockedClient(t *testing.T, conns []driver.Conn, opts ...redlock.Option) (*redlock.Client, *faults.Clock) {
	t.Helper()
	client, err := redlock.New(conns, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { settle(t, client) })
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	redlock.SetHealthClock(client, clock.Now)
	return client, clock
}

// A node both failing and behind, as a stopped node is, counts as failing:
// it takes a spare skip before a node only behind. Node 0 is slow, node 3
// stopped and then failing, node 4 failing: nodes 3 and 4 are skipped, and
// nodes 0 to 2 grant the lock.
func TestAFailingNodeBehindIsSkippedAsFailing(t *testing.T) {
	const nodeTimeout = 40 * time.Second
	c := newCluster(t, 5)
	client, clock := newClockedClient(t, c.conns, redlock.WithNodeTimeout(nodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()))
	ctx := context.Background()
	held := mustLock(t, client, "held", time.Minute)

	// Node 3 fails the acquires and releases of b and c: failing.
	c.faults[3].Set(faults.Fail)
	for _, name := range []string{"b", "c"} {
		l := mustLockNoSettle(t, client, name)
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(%s): %v", name, err)
		}
		settle(t, client)
	}
	// Nodes 0 and 3 hold the extend of held past a tenth of the node
	// timeout after its round: behind, until the test ends. Node 3 then
	// fails its calls again.
	release0 := blockCall(c.faults[0])
	defer release0()
	ch := make(chan struct{})
	defer close(ch)
	var calls atomic.Int32
	c.faults[3].Choose(func(string) faults.Fault {
		if calls.Add(1) == 1 {
			<-ch
		}
		return faults.Fault{Mode: faults.Fail}
	})
	if err := held.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	clock.Advance(nodeTimeout/10 + time.Millisecond)

	// Node 4 fails the acquires and releases of x and y: failing.
	c.faults[4].Set(faults.Fail)
	mustNotAcquire(t, client, "x", "y")
	if _, err := client.TryLock(ctx, "fresh", time.Minute); err != nil {
		t.Errorf("TryLock with nodes 1 and 2 healthy, node 0 behind, node 3 failing and behind, node 4 failing: %v", err)
	}
}

// mustNotAcquire tries to lock each name once and fails the test unless
// every attempt is refused with ErrNotAcquired.
func mustNotAcquire(t *testing.T, client *redlock.Client, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := client.TryLock(context.Background(), name, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock(%s) = %v, want ErrNotAcquired", name, err)
		}
	}
}
