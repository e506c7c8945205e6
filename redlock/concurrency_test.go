package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// heldReplies is a Conn that applies every request at once but, while
// hold is set, returns its reply only when release is closed.
type heldReplies struct {
	driver.Conn
	hold    atomic.Bool
	applied chan struct{} // receives after each held request was applied
	release chan struct{}
}

func (h *heldReplies) wait() {
	if h.hold.Load() {
		h.applied <- struct{}{}
		<-h.release
	}
}

func (h *heldReplies) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := h.Conn.Eval(ctx, script, keys, args)
	h.wait()
	return reply, err
}

func (h *heldReplies) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := h.Conn.EvalSha(ctx, sha1, keys, args)
	h.wait()
	return reply, err
}

// nodeTTLs returns the TTL of key on every node, shortest first.
func (c *cluster) nodeTTLs(key string) []time.Duration {
	ttls := make([]time.Duration, len(c.servers))
	for i, s := range c.servers {
		ttls[i] = s.TTL(key)
	}
	slices.Sort(ttls)
	return ttls
}

// Two Extends of one Lock with different TTLs: each node keeps the TTL of
// the request it applied last, so the validity must come from the round
// that ran last, not from the one whose replies came back last.
func TestConcurrentExtendsNeverLeaveValidityBeyondTheNodes(t *testing.T) {
	c := newCluster(t, 3)
	held := make([]*heldReplies, len(c.conns))
	conns := make([]driver.Conn, len(c.conns))
	for i, conn := range c.conns {
		held[i] = &heldReplies{Conn: conn, applied: make(chan struct{}, 1), release: make(chan struct{})}
		conns[i] = held[i]
	}
	client, err := redlock.New(conns, redlock.WithNodeTimeout(900*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, client, "k", 3*time.Second)
	ctx := context.Background()

	for _, h := range held {
		h.hold.Store(true)
	}
	long := make(chan error, 1)
	go func() { long <- l.Extend(ctx, 10*time.Second) }()
	for _, h := range held {
		<-h.applied // every node now has the 10s TTL; no reply has come back
		h.hold.Store(false)
	}
	short := make(chan error, 1)
	go func() { short <- l.Extend(ctx, time.Second) }()
	// Let the long round's replies go once the short round had its chance
	// to run first (it must not: it waits for the long one).
	time.Sleep(100 * time.Millisecond)
	for _, h := range held {
		close(h.release)
	}
	if err := <-long; err != nil {
		t.Fatalf("Extend(10s): %v", err)
	}
	if err := <-short; err != nil {
		t.Fatalf("Extend(1s): %v", err)
	}
	ttls := c.nodeTTLs("k")
	if got, quorumTTL := l.TTL(), ttls[1]; got > quorumTTL {
		t.Errorf("lock TTL = %v after both Extends, but a quorum of nodes expire the key within %v (node TTLs %v)", got, quorumTTL, ttls)
	}
}

// A KeepAlive must follow an Extend that shortens the lock: its loss timer
// is armed before the new validity.
func TestKeepAliveFollowsAShorterExtend(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", 4*time.Second)
	kctx, stop := l.KeepAlive(context.Background())
	defer stop()
	if err := l.Extend(context.Background(), 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline, ok := redlock.ArmedLossDeadline(kctx)
	if until := l.ValidUntil(); !ok || !deadline.Before(until) {
		t.Errorf("loss timer armed for %v after ValidUntil (armed: %v); want before it", deadline.Sub(until), ok)
	}
}

// After Unlock starts no extend round may run, even when the Unlock was
// not confirmed, and the KeepAlive context is cancelled by the time Unlock
// returns.
func TestNoRenewalAfterUnlock(t *testing.T) {
	c := newCluster(t, 3)
	var mu sync.Mutex
	var unlockedAt time.Time
	var lateRounds []time.Duration
	record := func(_ context.Context, info observe.RoundInfo) {
		mu.Lock()
		defer mu.Unlock()
		if !unlockedAt.IsZero() && info.Start.After(unlockedAt) {
			lateRounds = append(lateRounds, info.Start.Sub(unlockedAt))
		}
	}
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithObserver(observe.Observer{Extended: record, ExtendFailed: record}))
	const ttl = 600 * time.Millisecond
	l := mustLock(t, client, "k", ttl)
	kctx, stop := l.KeepAlive(context.Background())
	defer stop()
	// Let the renewal goroutine settle into its wait for the renewal
	// point, where an Unlock finds it in practice.
	time.Sleep(ttl / 10)

	c.setFaults(faults.Fail, faults.Fail) // the release reaches one node only
	mu.Lock()
	unlockedAt = time.Now()
	mu.Unlock()
	if err := l.Unlock(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock with two of three nodes failing = %v, want ErrNotHeld", err)
	}
	select {
	case <-kctx.Done():
	default:
		t.Fatal("the KeepAlive context is still open after Unlock returned")
	}
	if cause := context.Cause(kctx); !errors.Is(cause, redlock.ErrReleased) {
		t.Errorf("cause = %v, want ErrReleased", cause)
	}
	c.setFaults(faults.Pass, faults.Pass)
	// Past the point where renewal would have extended the lock.
	time.Sleep(ttl)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(lateRounds) > 0 {
		t.Errorf("extend rounds started after Unlock: %v after it", lateRounds)
	}
	if err := l.Extend(context.Background(), ttl); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Extend after an unconfirmed Unlock = %v, want ErrReleased", err)
	}
}

// Resume of the value of a Lock the Client still holds continues that
// Lock, so that its rounds stay ordered with the Lock's own.
func TestResumeOfALiveLockContinuesIt(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", time.Second)
	ctx := context.Background()
	got, err := client.Resume(ctx, "k", l.Value(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != l {
		t.Errorf("Resume of a live lock's value returned another *Lock")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resume(ctx, "k", l.Value(), time.Second); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Resume of an unlocked lock's value = %v, want ErrReleased", err)
	}
}

// The zero Lock and a nil *Lock return errors, never panic.
func TestZeroAndNilLocks(t *testing.T) {
	ctx := context.Background()
	for name, l := range map[string]*redlock.Lock{"nil": nil, "zero": new(redlock.Lock)} {
		t.Run(name, func(t *testing.T) {
			if err := l.Extend(ctx, time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Errorf("Extend = %v, want ErrInvalidArgument", err)
			}
			if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Errorf("Unlock = %v, want ErrInvalidArgument", err)
			}
			kctx, stop := l.KeepAlive(ctx)
			stop()
			if cause := context.Cause(kctx); !errors.Is(cause, redlock.ErrInvalidArgument) {
				t.Errorf("KeepAlive context cause = %v, want ErrInvalidArgument", cause)
			}
			if l.Key() != "" || l.Keys() != nil || l.Value() != "" || l.Token() != 0 || !l.ValidUntil().IsZero() || l.TTL() != 0 {
				t.Errorf("accessors of a %s Lock are not zero", name)
			}
		})
	}
}

// An extend round in which a quorum of nodes finds the keys gone ends the
// lock's validity at once: another owner may take it from then on, so
// neither ValidUntil nor Unlock may report it as held.
func TestValidityEndsWhenAQuorumFindsTheKeysGone(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", time.Minute)
	c.settle(t) // no acquire request may set the keys again
	for _, s := range c.servers[:2] {
		s.Del("k")
	}
	ctx := context.Background()
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend with the keys gone on 2 of 3 nodes = %v, want ErrNotHeld", err)
	}
	if until := l.ValidUntil(); until.After(time.Now()) {
		t.Errorf("ValidUntil is %v ahead after a quorum found the keys gone", time.Until(until))
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrExpired) {
		t.Errorf("Unlock of a lock whose keys a quorum lost = %v, want ErrExpired", err)
	}
}

// Two Resume calls of one value at once continue one Lock: the second
// takes its turn on the Lock the first made. Two Locks of one value would
// each believe only their own rounds, so one would report itself valid
// after the other was unlocked.
func TestConcurrentResumesOfOneValueShareALock(t *testing.T) {
	c := newCluster(t, 3)
	owner := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	taker := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := context.Background()
	for i := range 200 {
		key := fmt.Sprintf("k%d", i)
		l := mustLock(t, owner, key, 10*time.Second)
		var got [2]*redlock.Lock
		var errs [2]error
		var wg sync.WaitGroup
		for j := range got {
			wg.Go(func() { got[j], errs[j] = taker.Resume(ctx, key, l.Value(), 10*time.Second) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: Resume errors %v, %v", i, errs[0], errs[1])
		}
		if err := got[0].Unlock(ctx); err != nil {
			t.Fatalf("round %d: Unlock: %v", i, err)
		}
		if got[0] != got[1] {
			t.Fatalf("round %d: two Resumes of one value returned two Locks; after one was unlocked the other has ValidUntil %v", i, got[1].ValidUntil())
		}
	}
}

// Resume of one key of a live Lock over several keys, with its value,
// would make a second Lock of one value whose rounds the first one does
// not see: a shorter TTL would leave the first Lock's ValidUntil past the
// key's expiry on the nodes. Resume refuses it.
func TestResumeOfOneKeyOfALiveMultiKeyLock(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := context.Background()
	l, err := client.LockMulti(ctx, []string{"a", "b"}, time.Minute)
	if err != nil {
		t.Fatalf("LockMulti: %v", err)
	}
	c.settle(t)
	got, err := client.Resume(ctx, "a", l.Value(), time.Second)
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Resume of a, one key of a live Lock on a and b = %v, want ErrInvalidArgument", err)
	}
	c.settle(t)
	for i, s := range c.servers {
		if ttl := s.TTL("a"); ttl < l.TTL()-time.Second {
			t.Errorf("node %d: a expires in %v, the Lock on a and b reports %v", i, ttl, l.TTL())
		}
	}
	if got != nil && got != l {
		_ = got.Unlock(ctx)
	}
}
