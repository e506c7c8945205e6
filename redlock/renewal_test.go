package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// sleepCtx waits d or until ctx is done, and returns the cause in the
// latter case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func TestDoKeepsTheLockWhileFnRuns(t *testing.T) {
	c := newCluster(t, 5)
	// A 300ms TTL leaves little room: renew early, so that a round slowed
	// by a loaded machine can be retried before the loss margin.
	client := c.client(t, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithRenewal(0.7, 0.1))
	rival := c.client(t, redlock.WithNodeTimeout(100*time.Millisecond))
	ctx := context.Background()
	var rivalTries, rivalWins int
	err := client.Do(ctx, "k", 300*time.Millisecond, func(ctx context.Context) error {
		// Hold for ten TTLs while a rival keeps trying.
		end := time.Now().Add(3 * time.Second)
		for time.Now().Before(end) {
			if l, err := rival.TryLock(ctx, "k", 300*time.Millisecond); err == nil {
				rivalWins++
				l.Unlock(ctx)
			}
			rivalTries++
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if rivalWins != 0 {
		t.Errorf("a rival acquired the lock %d times of %d tries while Do held it", rivalWins, rivalTries)
	}
	if rivalTries < 10 {
		t.Errorf("the rival tried only %d times", rivalTries)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after Do", n)
	}
}

func TestDoReportsALostLock(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	var fnCause error
	err := client.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
		c.settle(t) // no acquire request may set the keys again
		for _, s := range c.servers[:3] {
			s.Del("k")
		}
		fnCause = sleepCtx(ctx, time.Minute)
		return errors.New("fn stopped")
	})
	if !errors.Is(fnCause, redlock.ErrLockLost) {
		t.Errorf("fn's context cause = %v, want ErrLockLost", fnCause)
	}
	if !errors.Is(err, redlock.ErrLockLost) || err == nil || !containsLine(err.Error(), "fn stopped") {
		t.Errorf("Do = %v, want fn's error joined with ErrLockLost", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after Do", n)
	}
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if s[:i] == line {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

func TestKeepAliveCancelsBeforeTheDeadlineOnLoss(t *testing.T) {
	tests := []struct {
		name       string
		breakNodes func(c *cluster)
	}{
		{"keys deleted on a majority", func(c *cluster) {
			for _, s := range c.servers[:3] {
				s.Del("k")
			}
		}},
		{"majority failing", func(c *cluster) { c.setFaults(faults.Fail, faults.Fail, faults.Fail) }},
		{"majority unreachable", func(c *cluster) { c.setFaults(faults.Hang, faults.Hang, faults.Hang) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 5)
			client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			l := mustLock(t, client, "k", time.Second)
			ctx, stop := l.KeepAlive(context.Background())
			defer stop()
			// Work under the lock often runs with a context derived from
			// KeepAlive's: it is cancelled before the deadline too.
			derived, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			deadline := l.ValidUntil()
			c.settle(t) // no acquire request may set the keys again
			tt.breakNodes(c)
			<-derived.Done()
			cancelled := time.Now()
			if cause := context.Cause(derived); !errors.Is(cause, redlock.ErrLockLost) {
				t.Errorf("cause of the derived context = %v, want ErrLockLost", cause)
			}
			if cause := context.Cause(ctx); !errors.Is(cause, redlock.ErrLockLost) {
				t.Errorf("cause = %v, want ErrLockLost", cause)
			}
			if !cancelled.Before(deadline) {
				t.Errorf("cancelled at %v, not before the validity deadline %v", cancelled, deadline)
			}
			stop()
			c.setFaults(faults.Pass, faults.Pass, faults.Pass)
			l.Unlock(context.Background())
		})
	}
}

func TestKeepAliveSurvivesMinorityFailures(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", 2*time.Second)
	first := l.ValidUntil()
	c.setFaults(faults.Fail, faults.Hang)
	ctx, stop := l.KeepAlive(context.Background())
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		t.Fatalf("kept-alive context ended with minority failures: %v", err)
	}
	stop()
	if !l.ValidUntil().After(first.Add(time.Second)) {
		t.Errorf("ValidUntil moved from %v to %v over 3s of renewal, want renewals", first, l.ValidUntil())
	}
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("cause after stop = %v, want context.Canceled", cause)
	}
	c.setFaults(faults.Pass, faults.Pass)
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock after renewal: %v", err)
	}
}

func TestHoldLimits(t *testing.T) {
	tests := []struct {
		name string
		opt  redlock.Option
	}{
		{"max hold", redlock.WithMaxHold(1200 * time.Millisecond)},
		{"max renewals", redlock.WithMaxRenewals(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3)
			client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), tt.opt)
			var cause error
			err := client.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
				cause = sleepCtx(ctx, time.Minute)
				return nil
			})
			if !errors.Is(cause, redlock.ErrHoldLimit) || errors.Is(cause, redlock.ErrLockLost) {
				t.Errorf("fn's context cause = %v, want ErrHoldLimit and not ErrLockLost", cause)
			}
			if !errors.Is(err, redlock.ErrHoldLimit) {
				t.Errorf("Do = %v, want ErrHoldLimit", err)
			}
			if n := c.keyCount(); n != 0 {
				t.Errorf("%d keys left after Do", n)
			}
		})
	}
}

func TestMaxRenewalsCountsRenewals(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithMaxRenewals(2))
	l := mustLock(t, client, "k", time.Second)
	var extends atomic.Int32
	c.faults[0].OnCall(func(method string) {
		if method == "EvalSha" {
			extends.Add(1)
		}
	})
	ctx, stop := l.KeepAlive(context.Background())
	<-ctx.Done()
	stop()
	// A renewal returns once a quorum has answered: node 0's request of
	// the last one may still be running.
	settle(t, client)
	if n := extends.Load(); n != 2 {
		t.Errorf("node 0 saw %d renewal rounds, want 2", n)
	}
	l.Unlock(context.Background())
}

func TestKeepAliveEndsOnUnlock(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", time.Second)
	ctx, stop := l.KeepAlive(context.Background())
	defer stop()
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, redlock.ErrReleased) {
		t.Errorf("cause after Unlock = %v, want ErrReleased", cause)
	}
}

func TestKeepAliveRefusals(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	var nilLock *redlock.Lock
	held := mustLock(t, client, "held", time.Minute)
	_, stopHeld := held.KeepAlive(context.Background())
	defer stopHeld()
	released := mustLock(t, client, "released", time.Minute)
	released.Unlock(context.Background())
	var nilCtx context.Context

	tests := []struct {
		name string
		lock *redlock.Lock
		ctx  context.Context
		want error
	}{
		{"nil lock", nilLock, context.Background(), redlock.ErrInvalidArgument},
		{"nil ctx", held, nilCtx, redlock.ErrInvalidArgument},
		{"already kept alive", held, context.Background(), redlock.ErrInvalidArgument},
		{"released", released, context.Background(), redlock.ErrReleased},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, stop := tt.lock.KeepAlive(tt.ctx)
			defer stop()
			if ctx.Err() == nil {
				t.Fatal("context is not cancelled")
			}
			if cause := context.Cause(ctx); !errors.Is(cause, tt.want) {
				t.Errorf("cause = %v, want %v", cause, tt.want)
			}
		})
	}
	if err := held.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock of the kept-alive lock: %v", err)
	}
}

func TestDoReleasesWhenFnPanics(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic of fn", p)
			}
		}()
		client.Do(context.Background(), "k", time.Minute, func(context.Context) error { panic("boom") })
	}()
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after fn panicked", n)
	}
}

func TestDoRejectsNilFn(t *testing.T) {
	c := newCluster(t, 1)
	err := c.client(t).Do(context.Background(), "k", time.Minute, nil)
	checkInvalid(t, err, "redlock: invalid argument: nil function")
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

func TestMultiKeyLocks(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	other := mustLock(t, client, "b", time.Minute)

	_, err := client.TryLockMulti(ctx, []string{"a", "b", "c"}, time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLockMulti overlapping a held key = %v, want ErrNotAcquired", err)
	}
	for _, s := range c.servers {
		if s.Exists("a") || s.Exists("c") {
			t.Errorf("a failed multi-key lock left keys behind: %v", s.Keys())
		}
	}
	other.Unlock(ctx)
	// The release of b on a node that had not answered when Unlock
	// returned would make that node refuse the multi-key lock.
	settle(t, client)

	l, err := client.LockMulti(ctx, []string{"a", "b", "c"}, time.Minute)
	if err != nil {
		t.Fatalf("LockMulti: %v", err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := c.holders(t, k, l.Value()); got != 3 {
			t.Errorf("%s held on %d nodes, want 3", k, got)
		}
	}
	if got := l.Keys(); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Errorf("Keys() = %v, want [a b c]", got)
	}
	if err := l.Extend(ctx, 2*time.Minute); err != nil {
		t.Fatalf("Extend of a multi-key lock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of a multi-key lock: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left", n)
	}

	var keys []string
	err = client.DoMulti(ctx, []string{"x", "y"}, time.Minute, func(context.Context) error {
		for _, s := range c.servers[:1] {
			keys = s.Keys()
		}
		return nil
	})
	if err != nil || len(keys) != 2 {
		t.Errorf("DoMulti = %v with keys %v held inside, want nil and [x y]", err, keys)
	}
}

func TestLockFromContext(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing())
	ctx := context.Background()
	type ctxKey struct{}
	var inFn *redlock.Lock
	err := client.Do(ctx, "k", time.Minute, func(ctx context.Context) error {
		l, ok := redlock.LockFromContext(context.WithValue(ctx, ctxKey{}, 1))
		if !ok {
			return errors.New("LockFromContext found no lock in a context derived from Do's")
		}
		inFn = l
		if l.Key() != "k" || l.Token() == 0 || l.TTL() <= 0 {
			return fmt.Errorf("the lock in Do's context: key %q, token %d, TTL %v", l.Key(), l.Token(), l.TTL())
		}
		if n := c.holders(t, "k", l.Value()); n != 3 {
			return fmt.Errorf("%d nodes hold the value of the lock in Do's context, want 3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if inFn == nil {
		t.Fatal("fn did not run")
	}

	l := mustLock(t, client, "other", time.Minute)
	kctx, stop := l.KeepAlive(ctx)
	if got, ok := redlock.LockFromContext(kctx); !ok || got != l {
		t.Errorf("LockFromContext(KeepAlive's context) = %p, %v; want %p", got, ok, l)
	}
	stop()
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}

	var nilLock *redlock.Lock
	refused, stopRefused := nilLock.KeepAlive(ctx)
	defer stopRefused()
	var nilCtx context.Context
	for name, ctx := range map[string]context.Context{"Background": ctx, "nil": nilCtx, "refused KeepAlive of a nil lock": refused} {
		if got, ok := redlock.LockFromContext(ctx); ok || got != nil {
			t.Errorf("LockFromContext(%s) = %p, %v; want nil, false", name, got, ok)
		}
	}
}

// Do names the loss of its lock once, however fn returns it: the cause of
// its context, wrapped or not, its context's Err, or nil; and the release
// that finds the lost lock gone adds nothing.
func TestDoNamesTheLossOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"cause", func(ctx context.Context) error { return context.Cause(ctx) }},
		{"Err", func(ctx context.Context) error { return ctx.Err() }},
		{"wrapped cause", func(ctx context.Context) error { return fmt.Errorf("writing: %w", context.Cause(ctx)) }},
		{"nil", func(context.Context) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 5)
			client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			err := client.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
				c.settle(t) // no acquire request may set the keys again
				for _, s := range c.servers[:3] {
					s.Del("k")
				}
				<-ctx.Done()
				return tc.fn(ctx)
			})
			if !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("Do = %v, want ErrLockLost", err)
			}
			msg := err.Error()
			if n := strings.Count(msg, "lock lost"); n != 1 {
				t.Errorf("Do = %q, naming the loss %d times; want once", msg, n)
			}
			for _, noise := range []string{"context canceled", "not held", "unlock"} {
				if strings.Contains(msg, noise) {
					t.Errorf("Do = %q, want no %q", msg, noise)
				}
			}
		})
	}
}
