package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLockAndUnlock(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			c := newCluster(t, n)
			client := c.client(t)
			ctx := context.Background()
			before := time.Now()
			l := mustLock(t, client, "orders", 10*time.Second)
			after := time.Now()

			if l.Key() != "orders" {
				t.Errorf("Key() = %q, want %q", l.Key(), "orders")
			}
			if got := c.holders(t, "orders", l.Value()); got != n {
				t.Errorf("%d nodes hold the lock, want %d", got, n)
			}
			// The wire format is the bare resource name with the value.
			for i, s := range c.servers {
				if ttl := s.TTL("orders"); ttl <= 0 || ttl > 10*time.Second {
					t.Errorf("node %d: key TTL = %v, want in (0, 10s]", i, ttl)
				}
			}
			drift := 10*time.Second/100 + 2*time.Millisecond
			if until := l.ValidUntil(); until.Before(before.Add(10*time.Second-drift)) || until.After(after.Add(10*time.Second-drift)) {
				t.Errorf("ValidUntil = %v, want start + 10s - %v with start in [%v, %v]", until, drift, before, after)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if n := c.keyCount(); n != 0 {
				t.Errorf("%d keys left after Unlock", n)
			}
		})
	}
}

func TestValuesAreFreshAndRandom(t *testing.T) {
	c := newCluster(t, 1)
	// A generous node timeout: a loaded machine must not turn a slow
	// Unlock into a failure of a test about values.
	client := c.client(t, redlock.WithNodeTimeout(2*time.Second))
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 200 {
		l := mustLock(t, client, "k", 10*time.Second)
		v := l.Value()
		if len(v) != 22 {
			t.Fatalf("value %q has %d characters, want 22 (128 bits, base64url)", v, len(v))
		}
		if seen[v] {
			t.Fatalf("value %q repeated at lock %d", v, i)
		}
		seen[v] = true
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestContention(t *testing.T) {
	c := newCluster(t, 5)
	// Every node's answer is counted below.
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, 3)))
	ctx := context.Background()
	holder := mustLock(t, client, "k", time.Minute)

	_, err := client.TryLock(ctx, "k", time.Minute)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) {
		t.Fatalf("TryLock of a held key = %v, want a *QuorumError matching ErrNotAcquired", err)
	}
	if qe.Op != redlock.OpLock || qe.Granted != 0 || qe.Refused != 5 || qe.Nodes != 5 || qe.Quorum != 3 || qe.Attempts != 1 || len(qe.Errors) != 0 {
		t.Errorf("QuorumError = %+v, want op lock, 0 granted, 5 refused of 5, quorum 3, 1 attempt, no node errors", qe)
	}

	_, err = client.Lock(ctx, "k", time.Minute)
	if !errors.As(err, &qe) || qe.Attempts != 4 {
		t.Errorf("Lock with 3 retries = %v, want a *QuorumError after 4 attempts", err)
	}
	if got := c.holders(t, "k", holder.Value()); got != 5 {
		t.Errorf("holder's lock is on %d nodes after contention, want 5", got)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	l.Unlock(ctx)
}

func TestMutualExclusionUnderConcurrency(t *testing.T) {
	c := newCluster(t, 3)
	// A generous node timeout: an Unlock that times out on a loaded
	// machine leaves the key held for good (in-process nodes expire
	// nothing), and every other worker would spend its retries on it.
	client := c.client(t,
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 2*time.Millisecond, 10000)),
		redlock.WithNodeTimeout(2*time.Second))
	ctx := context.Background()
	var inside atomic.Int32
	var overlaps atomic.Int32
	counter := 0
	var wg sync.WaitGroup
	const workers, rounds = 8, 25
	errs := make(chan error, workers*rounds)
	for range workers {
		wg.Go(func() {
			for range rounds {
				l, err := client.Lock(ctx, "counter", 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				counter++
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	if overlaps.Load() != 0 {
		t.Errorf("%d overlapping critical sections", overlaps.Load())
	}
	if counter != workers*rounds {
		t.Errorf("counter = %d, want %d", counter, workers*rounds)
	}
}

func TestMinorityFailureStillGrants(t *testing.T) {
	for _, mode := range []faults.Mode{faults.Fail, faults.Hang, faults.LoseReply} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newCluster(t, 5)
			client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			c.setFaults(mode, mode)
			l, err := client.TryLock(context.Background(), "k", time.Minute)
			if err != nil {
				t.Fatalf("TryLock with 2 of 5 nodes in %v: %v", mode, err)
			}
			if got := c.holders(t, "k", l.Value()); got < 3 {
				t.Errorf("lock on %d nodes, want at least 3", got)
			}
			c.setFaults(faults.Pass, faults.Pass)
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := c.keyCount(); n != 0 {
				t.Errorf("%d keys left after Unlock", n)
			}
		})
	}
}

func TestMajorityFailureIsNotAcquiredAndLeavesNoKey(t *testing.T) {
	for _, mode := range []faults.Mode{faults.Fail, faults.Hang, faults.LoseReply} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newCluster(t, 5)
			client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout))
			c.setFaults(mode, mode, mode)
			_, err := client.TryLock(context.Background(), "k", time.Minute)
			var qe *redlock.QuorumError
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) {
				t.Fatalf("TryLock with 3 of 5 nodes in %v = %v, want a *QuorumError matching ErrNotAcquired", mode, err)
			}
			if qe.Granted != 2 || len(qe.Errors) != 3 {
				t.Errorf("QuorumError = %+v, want 2 granted and 3 node errors", qe)
			}
			for i, ne := range qe.Errors {
				if ne.Node != i {
					t.Errorf("node error %d is for node %d, want %d", i, ne.Node, i)
				}
			}
			wantErr := faults.ErrInjected
			if mode == faults.Hang {
				wantErr = redlock.ErrNodeTimeout
			}
			var ne *redlock.NodeError
			if !errors.As(err, &ne) || !errors.Is(ne, wantErr) {
				t.Errorf("first node error = %v, want one matching %v", ne, wantErr)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v matches context.DeadlineExceeded though the caller's context did not end", err)
			}
			// LoseReply applied the script on the failing nodes; the
			// cleanup must have removed those keys too.
			c.setFaults(faults.Pass, faults.Pass, faults.Pass)
			if n := c.keyCount(); n != 0 {
				t.Errorf("%d keys left after a failed attempt", n)
			}
		})
	}
}

func TestQuorumWithoutValidityIsNotAcquired(t *testing.T) {
	c := newCluster(t, 3)
	// A TTL that one round waiting the whole node timeout would leave
	// without validity is refused up front, so a round that answers within
	// the node timeout always leaves some. A fenced lock makes two rounds:
	// every node answers each after 300ms, within the 400ms node timeout,
	// but 1s - 2*300ms - 502ms of drift leaves no validity.
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithFencing(), redlock.WithDriftFactor(0.5), redlock.WithNodeTimeout(400*time.Millisecond))
	// Load the scripts first so the slow rounds are a single request per
	// node.
	if err := mustLock(t, client, "warm-up", time.Second).Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.faults {
		f.Delay(300 * time.Millisecond)
	}
	_, err := client.TryLock(context.Background(), "k", time.Second)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want a *QuorumError matching ErrNotAcquired", err)
	}
	if qe.Granted != 3 || qe.Validity > 0 {
		t.Errorf("QuorumError = %+v, want 3 granted with validity <= 0", qe)
	}
	for i, s := range c.servers {
		if s.Exists("k") {
			t.Errorf("node %d keeps the lock key after a too-slow attempt", i)
		}
	}
}

// cancelAfterApply runs each call to completion and then cancels the
// caller's context, as when a caller gives up while its request is on the
// wire.
type cancelAfterApply struct {
	driver.Conn
	cancel context.CancelFunc
}

func (c cancelAfterApply) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	reply, err := c.Conn.EvalSha(context.WithoutCancel(ctx), sha, keys, args)
	if err == nil && len(args) == 2 { // acquire and extend carry a TTL
		c.cancel()
		return nil, ctx.Err()
	}
	return reply, err
}

func TestCancelledLockLeavesNoKey(t *testing.T) {
	c := newCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conns := make([]driver.Conn, len(c.conns))
	for i, conn := range c.conns {
		conns[i] = cancelAfterApply{conn, cancel}
	}
	client, err := redlock.New(conns)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Lock(ctx, "k", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with cancelled ctx = %v, want ErrNotAcquired and context.Canceled", err)
	}
	settle(t, client)
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after a cancelled Lock", n)
	}
}

func TestLockWaitingForAHeldKeyEndsWithContext(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	holder := mustLock(t, client, "k", time.Minute)
	c.settle(t) // every node holds the holder's key before the waiter tries
	ctx, cancel := context.WithCancel(context.Background())
	c.faults[0].OnCall(func(string) { cancel() })
	_, err := client.Lock(ctx, "k", time.Minute)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) || !errors.As(err, &qe) {
		t.Fatalf("Lock = %v, want a *QuorumError matching ErrNotAcquired and context.Canceled", err)
	}
	_, err = client.Lock(ctx, "k", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a done ctx = %v, want ErrNotAcquired and context.Canceled", err)
	}
	if got := c.holders(t, "k", holder.Value()); got != 3 {
		t.Errorf("holder's lock on %d nodes, want 3", got)
	}
}

func TestUnlockIsDetachedFromCancellation(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := mustLock(t, client, "k", time.Minute)
	cancel()
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a cancelled ctx: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after Unlock with a cancelled ctx", n)
	}
}

// The release script counts a key that is already gone as released, so
// that a re-sent release still confirms. Keys that the nodes expired early
// (their clocks ran fast) while the lock is still valid are released too.
func TestUnlockCountsKeysAlreadyGoneWhileTheLockIsValid(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	l := mustLock(t, client, "k", time.Minute)
	for _, s := range c.servers {
		s.FastForward(time.Minute)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock of a valid lock whose keys the nodes expired = %v, want nil", err)
	}
}

func TestUnlockDoesNotTouchAnotherOwnersKey(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WaitForEveryNode())
	l := mustLock(t, client, "k", time.Minute)
	for _, s := range c.servers {
		s.Set("k", "someone-else")
	}
	err := l.Unlock(context.Background())
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotHeld) || !errors.As(err, &qe) || qe.Op != redlock.OpUnlock || qe.Refused != 3 {
		t.Fatalf("Unlock of a taken-over key = %v, want a *QuorumError (unlock, 3 refused) matching ErrNotHeld", err)
	}
	if got := c.holders(t, "k", "someone-else"); got != 3 {
		t.Errorf("other owner's key on %d nodes after Unlock, want 3", got)
	}
	if err := l.Unlock(context.Background()); errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Unlock after an unconfirmed Unlock = %v, want another try, not ErrReleased", err)
	}
}

func TestExtend(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t)
	ctx := context.Background()
	l := mustLock(t, client, "k", time.Second)
	first := l.ValidUntil()
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !l.ValidUntil().After(first) {
		t.Errorf("ValidUntil after Extend = %v, want after %v", l.ValidUntil(), first)
	}
	c.settle(t)
	for i, s := range c.servers {
		if ttl := s.TTL("k"); ttl <= time.Second {
			t.Errorf("node %d: TTL after Extend = %v, want above 1s", i, ttl)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestExtendNeverRecreatesAKey(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WaitForEveryNode())
	l := mustLock(t, client, "k", time.Minute)
	until := l.ValidUntil()
	for _, s := range c.servers {
		s.Del("k")
	}
	err := l.Extend(context.Background(), time.Minute)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotHeld) || !errors.As(err, &qe) || qe.Op != redlock.OpExtend || qe.Refused != 3 {
		t.Fatalf("Extend of deleted keys = %v, want a *QuorumError (extend, 3 refused) matching ErrNotHeld", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("Extend re-created %d keys", n)
	}
	if l.ValidUntil().After(until) {
		t.Errorf("failed Extend moved ValidUntil later: %v, was %v", l.ValidUntil(), until)
	}
}

func TestFailedExtendNeverMovesValidityLater(t *testing.T) {
	c := newCluster(t, 5)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", 10*time.Second)
	until := l.ValidUntil()
	c.setFaults(faults.LoseReply, faults.LoseReply, faults.LoseReply)
	if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend with 3 of 5 nodes losing replies = %v, want ErrNotHeld", err)
	}
	if got := l.ValidUntil(); !got.Equal(until) {
		t.Errorf("ValidUntil after a failed longer Extend = %v, want unchanged %v", got, until)
	}
	// A failed shorter Extend may have shortened the keys on the nodes
	// that applied it, so the validity must shrink to match.
	if err := l.Extend(context.Background(), 2*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("shorter Extend = %v, want ErrNotHeld", err)
	}
	if got := l.ValidUntil(); !got.Before(until) {
		t.Errorf("ValidUntil after a failed shorter Extend = %v, want before %v", got, until)
	}
	c.setFaults(faults.Pass, faults.Pass, faults.Pass)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestResume(t *testing.T) {
	c := newCluster(t, 3)
	owner := c.client(t)
	other := c.client(t)
	ctx := context.Background()
	l := mustLock(t, owner, "k", time.Second)

	taken, err := other.Resume(ctx, "k", l.Value(), time.Minute)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if taken.Key() != "k" || taken.Value() != l.Value() || taken.TTL() <= time.Second {
		t.Errorf("resumed lock: key %q value %q TTL %v, want k, %q, above 1s", taken.Key(), taken.Value(), taken.TTL(), l.Value())
	}
	if err := taken.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the resumed lock: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after releasing a resumed lock", n)
	}
	if _, err := other.Resume(ctx, "k", l.Value(), time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Resume of a released lock = %v, want ErrNotHeld", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("Resume of a released lock created %d keys", n)
	}
}

func TestScriptsRecoverFromFlush(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	mustLock(t, client, "a", time.Minute).Unlock(ctx)

	// Really flush the servers' script caches ...
	for _, s := range c.servers {
		rc := resp.Dial(s.Addr())
		if _, err := rc.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		rc.Close()
	}
	l := mustLock(t, client, "b", time.Minute)
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after SCRIPT FLUSH: %v", err)
	}
	// ... and make every EVALSHA fail as on a node that keeps forgetting.
	for _, f := range c.faults {
		f.ForgetScripts(true)
	}
	l = mustLock(t, client, "c", time.Minute)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with NOSCRIPT on every EVALSHA: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

func TestKeyPrefix(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithKeyPrefix("lock:"))
	l := mustLock(t, client, "k", time.Minute)
	if l.Key() != "k" {
		t.Errorf("Key() = %q, want the resource name %q", l.Key(), "k")
	}
	if got := c.holders(t, "lock:k", l.Value()); got != 3 {
		t.Errorf("%d nodes hold lock:k, want 3", got)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

func TestValueGenerator(t *testing.T) {
	c := newCluster(t, 3)
	var calls atomic.Int32
	client := c.client(t,
		redlock.WithValueGenerator(func() (string, error) {
			return fmt.Sprintf("v%d", calls.Add(1)), nil
		}),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(0, 0, 2)))
	for _, s := range c.servers {
		s.Set("k", "other")
	}
	if _, err := client.Lock(context.Background(), "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock = %v, want ErrNotAcquired", err)
	}
	if calls.Load() != 3 {
		t.Errorf("value generator called %d times for 3 attempts, want one fresh value per attempt", calls.Load())
	}

	failing := c.client(t, redlock.WithValueGenerator(func() (string, error) { return "", errors.New("no entropy") }))
	if _, err := failing.Lock(context.Background(), "x", time.Minute); err == nil || err.Error() != "redlock: generating a lock value: no entropy" {
		t.Errorf("Lock with a failing generator = %v", err)
	}
	empty := c.client(t, redlock.WithValueGenerator(func() (string, error) { return "", nil }))
	if _, err := empty.Lock(context.Background(), "x", time.Minute); err == nil {
		t.Error("Lock with an empty generated value succeeded")
	}
}

// TestAccessorsDuringExtend reads a lock's keys while Extend replaces its
// request: under -race, any unguarded read of the shared state fails.
func TestAccessorsDuringExtend(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	l := mustLock(t, client, "k", time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			if err := l.Extend(ctx, time.Minute); err != nil {
				t.Errorf("Extend: %v", err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		if got := l.Key(); got != "k" {
			t.Fatalf("Key() = %q, want %q", got, "k")
		}
		if got := l.Keys(); len(got) != 1 || got[0] != "k" {
			t.Fatalf("Keys() = %q, want [k]", got)
		}
	}
}
