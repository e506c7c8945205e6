package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// These tests play a Redis client that re-sends a command whose connection
// broke after it was sent (go-redis does, up to MaxRetries times): the node
// runs the script twice and the caller sees the second reply.

func TestFailedLockLeavesNoKeyWhenAcquireIsAppliedTwice(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fencedName(fenced), func(t *testing.T) {
			c := newCluster(t, 3)
			client := c.client(t, fencedOptions(fenced)...)
			c.servers[2].Set("k", "other")
			c.setFaults(faults.Duplicate, faults.Fail)
			_, err := client.TryLock(context.Background(), "k", 30*time.Second)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
			}
			c.settle(t)
			if c.servers[0].Exists("k") {
				got, _ := c.servers[0].Get("k")
				t.Errorf("node 0 keeps k = %q (TTL %v) after the failed attempt", got, c.servers[0].TTL("k"))
			}
			if got, _ := c.servers[2].Get("k"); got != "other" {
				t.Errorf("node 2 has k = %q, want the other owner's value", got)
			}
		})
	}
}

func TestAcquireAppliedTwiceOnAHealthyMajorityGrants(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fencedName(fenced), func(t *testing.T) {
			c := newCluster(t, 3)
			client := c.client(t, fencedOptions(fenced)...)
			c.setFaults(faults.Duplicate, faults.Duplicate, faults.Fail)
			l, err := client.TryLock(context.Background(), "k", 30*time.Second)
			if err != nil {
				t.Fatalf("TryLock with every request applied twice: %v", err)
			}
			if got := c.holders(t, "k", l.Value()); got != 2 {
				t.Errorf("k held on %d nodes, want 2", got)
			}
			if fenced && l.Token() != 1 {
				t.Errorf("token = %d, want 1", l.Token())
			}
		})
	}
}

func TestUnlockConfirmedWhenReleaseIsAppliedTwice(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", 30*time.Second)
	c.setFaults(faults.Duplicate, faults.Duplicate, faults.Duplicate)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock with every release applied twice: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after Unlock", n)
	}
}

func TestExtendConfirmedWhenAppliedTwice(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", 30*time.Second)
	c.settle(t)
	c.setFaults(faults.Duplicate, faults.Duplicate, faults.Duplicate)
	if err := l.Extend(context.Background(), time.Minute); err != nil {
		t.Fatalf("Extend with every request applied twice: %v", err)
	}
	c.settle(t)
	for i, s := range c.servers {
		if ttl := s.TTL("k"); ttl != time.Minute {
			t.Errorf("node %d: k has TTL %v, want 1m", i, ttl)
		}
	}
}

// A custom acquire script need not be idempotent: one that answers 0 on
// finding the caller's own key (plain SET NX) refuses the re-sent request
// although the first run set the key. The failed attempt is released on
// every node whatever it answered.
func TestFailedAttemptIsReleasedOnNodesThatRefused(t *testing.T) {
	const setNX = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0`
	c := newCluster(t, 3)
	client := c.client(t,
		redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithScripts(redlock.Scripts{Acquire: func(string) string { return setNX }}),
	)
	c.servers[2].Set("k", "other")
	c.setFaults(faults.Duplicate, faults.Fail)
	if _, err := client.TryLock(context.Background(), "k", 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	c.settle(t)
	if c.servers[0].Exists("k") {
		t.Errorf("node 0 refused (its second run found the key) and keeps k for %v", c.servers[0].TTL("k"))
	}
}

func fencedOptions(fenced bool) []redlock.Option {
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}
	if fenced {
		opts = append(opts, redlock.WithFencing())
	}
	return opts
}

func fencedName(fenced bool) string {
	if fenced {
		return "fenced"
	}
	return "plain"
}
