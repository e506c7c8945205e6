package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlocktest"
)

// A lock that nobody releases is gone from the nodes once its TTL has run
// out, without the test moving any clock.
func TestKeysExpireInRealTime(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client(redlock.WithNodeTimeout(nodeTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	const ttl = 2 * nodeTimeout
	abandoned := mustLock(t, client, "report", ttl)
	// A second owner waits for the keys to expire.
	next, err := nodes.Client(redlock.WithRetryStrategy(redlock.ConstantBackoff(ttl/4, 0, 1_000_000))).
		Lock(ctx, "report", time.Minute)
	if err != nil {
		t.Fatalf("Lock after the first lock's TTL: %v", err)
	}
	defer next.Unlock(ctx)
	if got := nodes.Holders(abandoned); got != 0 {
		t.Errorf("Holders(abandoned) = %d, want 0", got)
	}
}

// Advance expires a long TTL at once: the holder's Extend then fails, and
// another owner gets the lock.
func TestAdvance(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client()
	ctx := context.Background()

	lock := mustLock(t, client, "batch", time.Hour)
	nodes.Advance(time.Hour)
	if got := nodes.Holders(lock); got != 0 {
		t.Errorf("Holders after Advance(TTL) = %d, want 0", got)
	}
	if err := lock.Extend(ctx, time.Hour); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend after Advance(TTL): %v, want ErrNotHeld", err)
	}
	next, err := client.TryLock(ctx, "batch", time.Hour)
	if err != nil {
		t.Fatalf("TryLock after Advance(TTL): %v", err)
	}
	next.Unlock(ctx)
}

// Advancing one node past the TTL removes the lock there only.
func TestNodeAdvance(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	ctx := context.Background()
	lock := mustLock(t, nodes.Client(), "batch", time.Hour)
	defer lock.Unlock(ctx)
	nodes.Nodes()[0].Advance(time.Hour / 2)
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("Holders after advancing a node by half the TTL = %d, want 3", got)
	}
	nodes.Nodes()[0].Advance(time.Hour / 2)
	if got := nodes.Holders(lock); got != 2 {
		t.Errorf("Holders after advancing a node by the TTL = %d, want 2", got)
	}
	if keys := nodes.Nodes()[0].Keys(); len(keys) != 0 {
		t.Errorf("node 0 keys = %q, want none", keys)
	}
}

// With a manual clock keys outlive their TTL until the test advances time.
func TestManualClock(t *testing.T) {
	nodes := redlocktest.New(t, 3, redlocktest.WithManualClock())
	ctx := context.Background()
	const ttl = 2 * nodeTimeout
	lock, err := nodes.Client(redlock.WithNodeTimeout(nodeTimeout)).Lock(ctx, "report", ttl)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	time.Sleep(2 * ttl)
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("Holders after twice the TTL of wall time = %d, want 3", got)
	}
	nodes.Advance(ttl)
	if got := nodes.Holders(lock); got != 0 {
		t.Errorf("Holders after Advance(TTL) = %d, want 0", got)
	}
}
