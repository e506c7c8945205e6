package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// recorder is an Observer that writes every event as one line, so tests
// can compare the whole sequence.
type recorder struct {
	mu     sync.Mutex
	events []string
	values []string // every Value field seen
}

func (r *recorder) add(value, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	if value != "" {
		r.values = append(r.values, value)
	}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

// roundLine writes a round as "Callback(op) keys ...", listing the failed
// nodes after their count, each with whether its error is the injected one
// (an error that is no *redlock.NodeError shows as such).
func roundLine(name string, info observe.RoundInfo) string {
	line := fmt.Sprintf("%s(%s) %s attempt=%d granted=%d refused=%d errors=%d",
		name, info.Op, strings.Join(info.Keys, ","), info.Attempt, info.Granted, info.Refused, len(info.Errors))
	for _, err := range info.Errors {
		var ne *redlock.NodeError
		if !errors.As(err, &ne) {
			line += fmt.Sprintf(" not-a-NodeError(%v)", err)
			continue
		}
		line += fmt.Sprintf(" node%d:injected=%t", ne.Node, errors.Is(ne.Err, faults.ErrInjected))
	}
	return line + fmt.Sprintf(" quorum=%d/%d %s", info.Quorum, info.Nodes, okWord(info.OK))
}

func (r *recorder) observer() observe.Observer {
	return observe.Observer{
		LockStart: func(ctx context.Context, info observe.LockStartInfo) context.Context {
			r.add("", "LockStart %s ttl=%v", strings.Join(info.Keys, ","), info.TTL)
			return ctx
		},
		AttemptDone: func(_ context.Context, info observe.RoundInfo) {
			r.add(info.Value, "%s", roundLine("AttemptDone", info))
		},
		Acquired: func(_ context.Context, info observe.AcquiredInfo) {
			r.add(info.Value, "Acquired %s attempts=%d", strings.Join(info.Keys, ","), info.Attempts)
		},
		NotAcquired: func(_ context.Context, info observe.NotAcquiredInfo) {
			r.add("", "NotAcquired %s attempts=%d reason=%s", strings.Join(info.Keys, ","), info.Attempts, info.Reason)
		},
		Extended: func(_ context.Context, info observe.RoundInfo) {
			r.add(info.Value, "%s", roundLine("Extended", info))
		},
		ExtendFailed: func(_ context.Context, info observe.RoundInfo) {
			r.add(info.Value, "%s", roundLine("ExtendFailed", info))
		},
		LockLost: func(_ context.Context, info observe.LockLostInfo) {
			r.add(info.Value, "LockLost %s lost=%t", strings.Join(info.Keys, ","), errors.Is(info.Err, redlock.ErrLockLost))
		},
		Released: func(_ context.Context, info observe.RoundInfo) {
			r.add(info.Value, "%s", roundLine("Released", info))
		},
	}
}

func wantEvents(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// checkValues fails if an event showed more of the lock value than a short
// prefix.
func checkValues(t *testing.T, r *recorder, value string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == 0 {
		t.Fatal("no event carried a value prefix")
	}
	for _, v := range r.values {
		prefix, ok := strings.CutSuffix(v, "…")
		if !ok || len(prefix) > 4 || !strings.HasPrefix(value, prefix) {
			t.Errorf("event value %q is not a short prefix of the lock value", v)
		}
	}
}

func TestObserverUncontendedLockUnlock(t *testing.T) {
	c := newCluster(t, 3)
	rec := &recorder{}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(rec.observer()))
	ctx := context.Background()
	l := mustLock(t, client, "k", time.Second)
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=1s",
		"AttemptDone(lock) k attempt=1 granted=3 refused=0 errors=0 quorum=2/3 ok",
		"Acquired k attempts=1",
		"Extended(extend) k attempt=0 granted=3 refused=0 errors=0 quorum=2/3 ok",
		"Released(unlock) k attempt=0 granted=3 refused=0 errors=0 quorum=2/3 ok",
	})
	checkValues(t, rec, l.Value())
}

func TestObserverContentionWithRetries(t *testing.T) {
	c := newCluster(t, 3)
	holder := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	rec := &recorder{}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(rec.observer()),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, 2)))
	held := mustLock(t, holder, "k", 10*time.Second)
	if _, err := client.Lock(context.Background(), "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock of a held key: got %v, want ErrNotAcquired", err)
	}
	refused := "AttemptDone(lock) k attempt=%d granted=0 refused=3 errors=0 quorum=2/3 failed"
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=1s",
		fmt.Sprintf(refused, 1),
		fmt.Sprintf(refused, 2),
		fmt.Sprintf(refused, 3),
		"NotAcquired k attempts=3 reason=held",
	})

	// Once the holder lets go, the next retry wins: here it lets go right
	// after the first attempt. Unlock returns once a majority has
	// released; settling the holder lets the last node's release end too,
	// which the next attempt, sent to every node, counts.
	rec = &recorder{}
	var once sync.Once
	var released error
	release := observe.Observer{AttemptDone: func(context.Context, observe.RoundInfo) {
		once.Do(func() {
			if released = held.Unlock(context.Background()); released == nil {
				released = settleCtx(context.Background(), holder)
			}
		})
	}}
	client2 := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(release), redlock.WithObserver(rec.observer()),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, 5)))
	l, err := client2.Lock(context.Background(), "k", time.Second)
	if released != nil {
		t.Fatalf("holder's Unlock: %v", released)
	}
	if err != nil {
		t.Fatalf("Lock after the holder released: %v", err)
	}
	defer l.Unlock(context.Background())
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=1s",
		fmt.Sprintf(refused, 1),
		"AttemptDone(lock) k attempt=2 granted=3 refused=0 errors=0 quorum=2/3 ok",
		"Acquired k attempts=2",
	})
}

func TestObserverMajorityFailing(t *testing.T) {
	c := newCluster(t, 3)
	rec := &recorder{}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(rec.observer()))
	c.setFaults(faults.Fail, faults.Pass, faults.Fail)
	_, err := client.TryLock(context.Background(), "k", time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 of 3 nodes failing: got %v, want ErrNotAcquired", err)
	}
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=1s",
		"AttemptDone(lock) k attempt=1 granted=1 refused=0 errors=2 node0:injected=true node2:injected=true quorum=2/3 failed",
		"NotAcquired k attempts=1 reason=node_errors",
	})
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after the failed attempt", n)
	}
}

// A failed node's error is a *redlock.NodeError naming the node, whether
// it is read from the QuorumError a call returns or from the RoundInfo of
// an observer's event.
func TestNodeErrorInQuorumErrorAndRoundInfo(t *testing.T) {
	c := newCluster(t, 3)
	var round []error
	events := observe.Observer{AttemptDone: func(_ context.Context, info observe.RoundInfo) {
		round = slices.Clone(info.Errors)
	}}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(events))
	c.setFaults(faults.Fail, faults.Pass, faults.Fail)
	_, err := client.TryLock(context.Background(), "k", time.Second)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("TryLock with 2 of 3 nodes failing: got %v, want a *redlock.QuorumError", err)
	}
	var first *redlock.NodeError
	if !errors.As(err, &first) || first.Node != 0 {
		t.Errorf("errors.As(TryLock's error, *NodeError): got %v, want node 0's", first)
	}
	var fromQuorum []error
	for _, ne := range qe.Errors {
		fromQuorum = append(fromQuorum, ne)
	}
	for _, source := range []struct {
		name string
		errs []error
	}{{"QuorumError.Errors", fromQuorum}, {"RoundInfo.Errors", round}} {
		if len(source.errs) != 2 {
			t.Errorf("%s: got %v, want the errors of nodes 0 and 2", source.name, source.errs)
			continue
		}
		for i, err := range source.errs {
			node := 2 * i
			var ne *redlock.NodeError
			switch {
			case !errors.As(err, &ne):
				t.Errorf("%s[%d]: %v (%T) is not a *redlock.NodeError", source.name, i, err, err)
			case ne.Node != node || !errors.Is(ne.Err, faults.ErrInjected):
				t.Errorf("%s[%d]: got node %d, cause %v; want node %d, the injected failure", source.name, i, ne.Node, ne.Err, node)
			case !strings.HasPrefix(err.Error(), fmt.Sprintf("node %d: ", node)):
				t.Errorf("%s[%d]: message %q does not name node %d", source.name, i, err, node)
			}
		}
	}
}

func TestObserverExtensionFailure(t *testing.T) {
	c := newCluster(t, 3)
	rec := &recorder{}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(rec.observer()))
	ctx := context.Background()
	l := mustLock(t, client, "k", 5*time.Second)
	c.servers[0].Set("k", "intruder")
	c.servers[1].Set("k", "intruder")
	c.setFaults(faults.Pass, faults.Pass, faults.Fail)
	if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend of a lock taken over on 2 nodes: got %v, want ErrNotHeld", err)
	}
	c.setFaults(faults.Pass, faults.Pass, faults.Pass)
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock of a lock held on 1 node: got %v, want ErrNotHeld", err)
	}
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=5s",
		"AttemptDone(lock) k attempt=1 granted=3 refused=0 errors=0 quorum=2/3 ok",
		"Acquired k attempts=1",
		"ExtendFailed(extend) k attempt=0 granted=0 refused=2 errors=1 node2:injected=true quorum=2/3 failed",
		"Released(unlock) k attempt=0 granted=1 refused=2 errors=0 quorum=2/3 failed",
	})
}

func TestObserverLockLostUnderRenewal(t *testing.T) {
	c := newCluster(t, 3)
	rec := &recorder{}
	// A LockLost callback that panics on the renewal goroutine, where no
	// caller could recover it, is recovered too.
	panicky := observe.Observer{LockLost: func(context.Context, observe.LockLostInfo) { panic("observer bug") }}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(panicky), redlock.WithObserver(rec.observer()))
	err := client.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
		// Another party takes the keys over on every node: the first
		// renewal finds them gone.
		for _, s := range c.servers {
			s.Set("k", "intruder")
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do: got %v, want ErrLockLost", err)
	}
	wantEvents(t, rec.got(), []string{
		"LockStart k ttl=1s",
		"AttemptDone(lock) k attempt=1 granted=3 refused=0 errors=0 quorum=2/3 ok",
		"Acquired k attempts=1",
		"ExtendFailed(extend) k attempt=0 granted=0 refused=3 errors=0 quorum=2/3 failed",
		"LockLost k lost=true",
		"Released(unlock) k attempt=0 granted=0 refused=3 errors=0 quorum=2/3 failed",
	})
}

func TestObserverPanicsAreRecovered(t *testing.T) {
	c := newCluster(t, 3)
	boom := func() { panic("observer bug") }
	panicky := observe.Observer{
		LockStart:    func(context.Context, observe.LockStartInfo) context.Context { boom(); return nil },
		AttemptDone:  func(context.Context, observe.RoundInfo) { boom() },
		Acquired:     func(context.Context, observe.AcquiredInfo) { boom() },
		NotAcquired:  func(context.Context, observe.NotAcquiredInfo) { boom() },
		Extended:     func(context.Context, observe.RoundInfo) { boom() },
		ExtendFailed: func(context.Context, observe.RoundInfo) { boom() },
		Released:     func(context.Context, observe.RoundInfo) { boom() },
	}
	rec := &recorder{}
	// The recorder comes after the panicking observer: it still sees
	// every event.
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(panicky), redlock.WithObserver(rec.observer()))
	ctx := context.Background()

	l := mustLock(t, client, "k", 5*time.Second)
	if got := c.holders(t, "k", l.Value()); got != 3 {
		t.Fatalf("lock held on %d nodes, want 3", got)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	// A failed attempt whose callbacks panic still releases what it set.
	c.setFaults(faults.Fail, faults.Fail)
	if _, err := client.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 of 3 nodes failing: got %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after a failed attempt with panicking callbacks", n)
	}
	if got := len(rec.got()); got != 8 {
		t.Errorf("the observer after the panicking one saw %d events, want 8: %q", got, rec.got())
	}
}

func TestObserverContextFlowsFromLockStart(t *testing.T) {
	type ctxKey struct{}
	c := newCluster(t, 3)
	var mu sync.Mutex
	var seen []any
	see := func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ctx.Value(ctxKey{}))
	}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(observe.Observer{
		LockStart: func(ctx context.Context, _ observe.LockStartInfo) context.Context {
			return context.WithValue(ctx, ctxKey{}, "span")
		},
		AttemptDone: func(ctx context.Context, _ observe.RoundInfo) { see(ctx) },
		Acquired:    func(ctx context.Context, _ observe.AcquiredInfo) { see(ctx) },
	}))
	l := mustLock(t, client, "k", time.Second)
	defer l.Unlock(context.Background())
	if want := []any{"span", "span"}; !slices.Equal(seen, want) {
		t.Errorf("context values seen by the callbacks: got %v, want %v", seen, want)
	}
}
