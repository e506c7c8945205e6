package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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

// A node whose request is still running a quarter of the node timeout
// after its round returned is behind: new locks do not send it their
// acquire, nor their extends and releases, until it has caught up, while
// the lock whose request it holds goes on as usual. With
// WithSkipNodesBehind(false) every request is sent.
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
			client, err := redlock.New(conns, redlock.WithNodeTimeout(nodeTimeout), redlock.WithSkipNodesBehind(skip))
			if err != nil {
				t.Fatal(err)
			}
			clock := faults.NewClock(time.Unix(1_000_000, 0))
			redlock.SetLagClock(client, clock.Now)
			ctx := context.Background()

			// The stalled node holds a's acquire past its round.
			a, err := client.Lock(ctx, "a", time.Minute)
			if err != nil {
				t.Fatalf("Lock(a): %v", err)
			}
			g.waitEntered(1)
			clock.Advance(nodeTimeout / 4)
			// Exactly a quarter of the node timeout late: not yet behind.
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
					notSent = notSent || ne.Node == 4 && errors.Is(ne, redlock.ErrNodeBehind)
				}
				if !notSent {
					t.Errorf("Extend(d): %v; want node 4 reported as not sent (ErrNodeBehind)", err)
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
