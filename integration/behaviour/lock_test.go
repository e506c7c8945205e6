package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// quorumError returns the *QuorumError in err's chain, failing the test
// when there is none.
func quorumError(t *testing.T, err error) *redlock.QuorumError {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T) has no *redlock.QuorumError in its chain", err, err)
	}
	return qe
}

func TestLockAndUnlock(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		client := locktest.Client(t, a, nodes)
		key := locktest.Key(t)

		before := time.Now()
		lock, err := client.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		after := time.Now()
		if lock.Key() != key || lock.Value() == "" {
			t.Fatalf("Key() = %q, Value() = %q; want %q and a random value", lock.Key(), lock.Value(), key)
		}
		if until := lock.ValidUntil(); !until.After(before) || until.After(after.Add(locktest.TTL)) {
			t.Errorf("ValidUntil is %v after the call started, want within (0, TTL %v] of the call", until.Sub(before), locktest.TTL)
		}
		if got := locktest.Holding(t, nodes, key, lock.Value()); got != len(nodes) {
			t.Errorf("%d of %d nodes hold the lock's value, want all (values %v)", got, len(nodes), locktest.Get(t, nodes, key))
		}
		for i, n := range nodes {
			if pttl := locktest.PTTL(t, n, key); pttl <= 0 || pttl > locktest.TTL {
				t.Errorf("node %d: PTTL = %v, want in (0, %v]", i, pttl, locktest.TTL)
			}
		}

		if err := lock.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		locktest.RequireNoKey(t, nodes, key)
		if !lock.ValidUntil().IsZero() || lock.TTL() != 0 {
			t.Errorf("after Unlock: ValidUntil = %v, TTL = %v; want the zero Time and 0", lock.ValidUntil(), lock.TTL())
		}
		if err := lock.Unlock(ctx); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("second Unlock = %v, want ErrReleased", err)
		}
		if err := lock.Extend(ctx, locktest.TTL); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("Extend after Unlock = %v, want ErrReleased", err)
		}
		locktest.RequireNoKey(t, nodes, key)
	})
}

func TestContention(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		holder := locktest.Client(t, a, nodes)
		rival := locktest.Client(t, a, nodes, redlock.WithRetryStrategy(redlock.ConstantBackoff(10*time.Millisecond, 10*time.Millisecond, 1000)))
		key := locktest.Key(t)

		held, err := holder.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("holder Lock: %v", err)
		}
		// Every node has the holder's key before the rival tries, rather
		// than only the quorum that decided the holder's Lock.
		locktest.Settle(t)
		if _, err := rival.TryLock(ctx, key, locktest.TTL); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("rival TryLock while held = %v, want ErrNotAcquired", err)
		} else if qe := quorumError(t, err); qe.Refused < locktest.Quorum(len(nodes)) || qe.Granted != 0 || len(qe.Errors) != 0 {
			// The round returns once a quorum refused: the other nodes
			// count in none of the figures.
			t.Errorf("rival TryLock: Granted %d, Refused %d, %d errors; want 0, at least %d, none: %v", qe.Granted, qe.Refused, len(qe.Errors), locktest.Quorum(len(nodes)), qe)
		}
		if got := locktest.Holding(t, nodes, key, held.Value()); got != len(nodes) {
			t.Fatalf("after the rival's attempt %d of %d nodes hold the holder's value", got, len(nodes))
		}

		// The rival waits in Lock while the holder still has the key.
		type outcome struct {
			lock *redlock.Lock
			err  error
			at   time.Time
		}
		got := make(chan outcome, 1)
		go func() {
			l, err := rival.Lock(ctx, key, locktest.TTL)
			got <- outcome{l, err, time.Now()}
		}()
		select {
		case o := <-got:
			t.Fatalf("rival Lock returned (%v) while the key was held", o.err)
		case <-time.After(200 * time.Millisecond):
		}
		unlockStart := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatalf("holder Unlock: %v", err)
		}
		o := <-got
		if o.err != nil {
			t.Fatalf("rival Lock after the holder's Unlock: %v", o.err)
		}
		defer o.lock.Unlock(ctx)
		if !o.at.After(unlockStart) {
			t.Errorf("rival's Lock returned before the holder's Unlock started")
		}
		if o.lock.Value() == held.Value() {
			t.Errorf("rival got the holder's value %q; every owner must draw its own", o.lock.Value())
		}
		locktest.RequireHeldBy(t, nodes, key, o.lock.Value())
		// The old holder's value no longer opens the lock.
		if err := held.Unlock(ctx); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("holder's second Unlock = %v, want ErrReleased", err)
		}
		locktest.RequireHeldBy(t, nodes, key, o.lock.Value())
	})
}

// TestMutualExclusion has several clients race for one key at once, round
// after round: at most one may win each round.
func TestMutualExclusion(t *testing.T) {
	const clients, rounds = 4, 10
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		all := make([]*redlock.Client, clients)
		for i := range all {
			all[i] = locktest.Client(t, a, nodes)
		}
		for round := range rounds {
			key := locktest.Key(t)
			locks := make(chan *redlock.Lock, clients)
			errs := make(chan error, clients)
			start := make(chan struct{})
			for _, c := range all {
				go func() {
					<-start
					l, err := c.TryLock(ctx, key, locktest.TTL)
					if err != nil {
						errs <- err
						return
					}
					locks <- l
				}()
			}
			close(start)
			var winners []*redlock.Lock
			for range clients {
				select {
				case l := <-locks:
					winners = append(winners, l)
				case err := <-errs:
					if !errors.Is(err, redlock.ErrNotAcquired) {
						t.Errorf("round %d: TryLock = %v, want success or ErrNotAcquired", round, err)
					}
				}
			}
			if len(winners) > 1 {
				t.Fatalf("round %d: %d clients hold %s at once", round, len(winners), key)
			}
			for _, l := range winners {
				locktest.RequireHeldBy(t, nodes, key, l.Value())
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("round %d: Unlock: %v", round, err)
				}
			}
		}
	})
}

func TestTryLock(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		first := locktest.Client(t, a, nodes)
		second := locktest.Client(t, a, nodes)
		key := locktest.Key(t)

		l1, err := first.TryLock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("TryLock of a free key: %v", err)
		}
		_, err = second.TryLock(ctx, key, locktest.TTL)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock of a held key = %v, want ErrNotAcquired", err)
		}
		if qe := quorumError(t, err); qe.Attempts != 1 || qe.Op != "lock" || qe.Nodes != len(nodes) || qe.Quorum != locktest.Quorum(len(nodes)) {
			t.Errorf("TryLock of a held key: Op %q, Attempts %d, Nodes %d, Quorum %d; want lock, 1, %d, %d",
				qe.Op, qe.Attempts, qe.Nodes, qe.Quorum, len(nodes), locktest.Quorum(len(nodes)))
		}
		if err := l1.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		// Unlock returns once a quorum released; a single attempt right
		// after it may still meet the release, or the late grant of the
		// refused attempt above, on their way to the other nodes.
		locktest.Settle(t)
		l2, err := second.TryLock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("TryLock after the holder's Unlock: %v", err)
		}
		locktest.RequireHeldBy(t, nodes, key, l2.Value())
		if err := l2.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		locktest.RequireNoKey(t, nodes, key)
	})
}

func TestExtend(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		client := locktest.Client(t, a, nodes)
		key := locktest.Key(t)

		lock, err := client.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		defer lock.Unlock(ctx)
		until := lock.ValidUntil()
		const longer = 3 * locktest.TTL
		if err := lock.Extend(ctx, longer); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !lock.ValidUntil().After(until) {
			t.Errorf("ValidUntil did not move later: %v before Extend, %v after", until, lock.ValidUntil())
		}
		for i, n := range nodes {
			// Above the first TTL, so only the extension can explain it.
			if pttl := locktest.PTTL(t, n, key); pttl <= locktest.TTL || pttl > longer {
				t.Errorf("node %d: PTTL after Extend(%v) = %v, want in (%v, %v]", i, longer, pttl, locktest.TTL, longer)
			}
		}

		// Lose the key on a majority: Extend must fail and must not create
		// the key again where it is gone.
		q := locktest.Quorum(len(nodes))
		for _, n := range nodes[:q] {
			n.Do(t, "DEL", key)
		}
		err = lock.Extend(ctx, longer)
		if !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Extend after losing the key on %d of %d nodes = %v, want ErrNotHeld", q, len(nodes), err)
		}
		// The round ends once q refusals leave no quorum: the other nodes
		// may or may not have granted by then.
		if qe := quorumError(t, err); qe.Op != "extend" || qe.Granted > len(nodes)-q || qe.Refused != q {
			t.Errorf("Extend: Op %q, Granted %d, Refused %d; want extend, at most %d, %d", qe.Op, qe.Granted, qe.Refused, len(nodes)-q, q)
		}
		locktest.RequireNoKey(t, nodes[:q], key)
	})
}

func TestExtendLeavesAnotherOwnersKey(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		client := locktest.Client(t, a, nodes)
		key := locktest.Key(t)
		lock, err := client.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		for _, n := range nodes {
			n.Do(t, "SET", key, "another-owner", "PX", 60000)
		}
		if err := lock.Extend(ctx, locktest.TTL); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend of a key another owner holds = %v, want ErrNotHeld", err)
		}
		if err := lock.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock of a key another owner holds = %v, want ErrNotHeld", err)
		}
		if got := locktest.Holding(t, nodes, key, "another-owner"); got != len(nodes) {
			t.Errorf("%d of %d nodes still hold the other owner's value, want all: %v", got, len(nodes), locktest.Get(t, nodes, key))
		}
		for i, n := range nodes {
			if pttl := locktest.PTTL(t, n, key); pttl <= locktest.TTL {
				t.Errorf("node %d: the other owner's key has PTTL %v, want above %v (untouched)", i, pttl, locktest.TTL)
			}
		}
	})
}

// TestResume takes over a lock from another client by its key and value.
func TestResume(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		owner := locktest.Client(t, a, nodes)
		heir := locktest.Client(t, a, nodes)
		key := locktest.Key(t)

		original, err := owner.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		// The hand-over waits for the owner's requests still on their
		// way: a late acquire would set its own TTL again.
		locktest.Settle(t)
		const longer = 3 * locktest.TTL
		resumed, err := heir.Resume(ctx, key, original.Value(), longer)
		if err != nil {
			t.Fatalf("Resume with the owner's value: %v", err)
		}
		if resumed.Value() != original.Value() || resumed.Key() != key {
			t.Errorf("resumed lock has key %q value %q, want %q %q", resumed.Key(), resumed.Value(), key, original.Value())
		}
		if resumed.TTL() <= locktest.TTL {
			t.Errorf("resumed lock's TTL() = %v, want above %v (Resume sets the TTL it is given)", resumed.TTL(), locktest.TTL)
		}
		for i, n := range nodes {
			if pttl := locktest.PTTL(t, n, key); pttl <= locktest.TTL {
				t.Errorf("node %d: PTTL after Resume(%v) = %v, want above %v", i, longer, pttl, locktest.TTL)
			}
		}
		if err := resumed.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the resumed lock: %v", err)
		}
		locktest.RequireNoKey(t, nodes, key)
		// The same value released again, by the original: the keys are
		// gone, which the release script counts as released, so that a
		// release a Redis client re-sends still confirms.
		if err := original.Unlock(ctx); err != nil {
			t.Errorf("the original's Unlock after the heir released = %v, want nil (the keys are gone)", err)
		}

		// Resume never creates a key: not for a free key, nor with a
		// wrong value for a held one.
		if _, err := heir.Resume(ctx, key, original.Value(), locktest.TTL); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Resume of a released lock = %v, want ErrNotHeld", err)
		}
		locktest.RequireNoKey(t, nodes, key)
		other, err := owner.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		defer other.Unlock(ctx)
		if _, err := heir.Resume(ctx, key, other.Value()+"x", locktest.TTL); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Resume with a wrong value = %v, want ErrNotHeld", err)
		}
		locktest.RequireHeldBy(t, nodes, key, other.Value())
	})
}

// TestExpiry lets a short lock run out: after ValidUntil its holder may no
// longer extend it, the servers drop the key on their own, and another
// client takes it.
func TestExpiry(t *testing.T) {
	const ttl = 600 * time.Millisecond
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		holder := locktest.Client(t, a, nodes)
		rival := locktest.Client(t, a, nodes, redlock.WithRetryStrategy(redlock.ConstantBackoff(20*time.Millisecond, 20*time.Millisecond, 100)))
		key := locktest.Key(t)

		lock, err := holder.Lock(ctx, key, ttl)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if _, err := rival.TryLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("rival TryLock while held = %v, want ErrNotAcquired", err)
		}
		validUntil := lock.ValidUntil()
		time.Sleep(time.Until(validUntil))
		if err := lock.Extend(ctx, ttl); !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("Extend after ValidUntil = %v, want ErrExpired", err)
		}
		if lock.TTL() != 0 {
			t.Errorf("TTL() after ValidUntil = %v, want 0", lock.TTL())
		}
		// The servers expire the key themselves, a little after
		// ValidUntil (which is shortened by the drift allowance).
		waitNoKey(t, nodes, key, 10*time.Second)

		taken, err := rival.Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("rival Lock after expiry: %v", err)
		}
		defer taken.Unlock(ctx)
		if !time.Now().After(validUntil) {
			t.Errorf("rival got the lock before the holder's ValidUntil")
		}
		// The expired holder's release must not touch the new owner's key.
		if err := lock.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("expired holder's Unlock = %v, want ErrNotHeld", err)
		}
		if got := locktest.Holding(t, nodes, key, taken.Value()); got != len(nodes) {
			t.Errorf("%d of %d nodes hold the new owner's value after the old owner's Unlock, want all", got, len(nodes))
		}
	})
}

// waitNoKey polls until no node has key; the limit ends a hang, it is not a
// bound the test asserts.
func waitNoKey(t *testing.T, nodes []*redisnode.Node, key string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		present := 0
		for _, n := range nodes {
			if n.Do(t, "EXISTS", key) == int64(1) {
				present++
			}
		}
		if present == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists on %d of %d nodes %v after it should have expired", key, present, len(nodes), limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRetryBudget checks that Lock makes exactly the attempts its retry
// strategy allows on a key that stays held.
func TestRetryBudget(t *testing.T) {
	strategies := []struct {
		name     string
		strategy redlock.RetryStrategy
		attempts int
	}{
		{"NoRetry", redlock.NoRetry(), 1},
		{"ConstantBackoff", redlock.ConstantBackoff(5*time.Millisecond, 5*time.Millisecond, 3), 4},
		{"ExponentialBackoff", redlock.ExponentialBackoff(2*time.Millisecond, 8*time.Millisecond, 4), 5},
	}
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		key := locktest.Key(t)
		held, err := locktest.Client(t, a, nodes).Lock(ctx, key, locktest.TTL)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		defer held.Unlock(ctx)
		conns := locktest.Conns(t, a, nodes)
		for _, s := range strategies {
			rival := locktest.NewClient(t, conns, redlock.WithRetryStrategy(s.strategy))
			_, err := rival.Lock(ctx, key, locktest.TTL)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("%s: Lock of a held key = %v, want ErrNotAcquired", s.name, err)
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: Lock = %v, which blames a context that did not end", s.name, err)
			}
			// The last round returns once no quorum can grant: once more
			// than n-q nodes refused or failed. held is granted by a
			// quorum, not always by every node (a node that timed out on
			// a loaded host never got its key), so the rival may win a
			// minority, never a quorum; a node that fails leaves fewer
			// refusals, never none.
			q := locktest.Quorum(len(nodes))
			decided := len(nodes) - q + 1
			if qe := quorumError(t, err); qe.Attempts != s.attempts || qe.Refused == 0 || qe.Granted >= q || qe.Refused+len(qe.Errors) < decided {
				t.Errorf("%s: Attempts %d, Granted %d, Refused %d, failed %d; want %d attempts, fewer than %d granted, at least one refused and %d refused or failed",
					s.name, qe.Attempts, qe.Granted, qe.Refused, len(qe.Errors), s.attempts, q, decided)
			}
		}
		locktest.RequireHeldBy(t, nodes, key, held.Value())
	})
}

// TestSameNodeTwiceRejected gives New the same node twice, which would let
// one server count as two votes.
func TestSameNodeTwiceRejected(t *testing.T) {
	nodes := redisnode.Start(t, 2, redisnode.Config{})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			conn := a.Conn(t, nodes[0].Addr())
			other := a.Conn(t, nodes[1].Addr())
			if _, err := redlock.New([]driver.Conn{conn, other, conn}); !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Errorf("New with one Conn twice = %v, want ErrInvalidArgument", err)
			}
		})
	}
}
