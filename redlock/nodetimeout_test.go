package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// The node timeout derived from the TTL is 5% of it, but never below 5 ms,
// which a loopback round trip fits in, nor above 1 s, as WithNodeTimeout
// documents. One given with WithNodeTimeout is used as given.
func TestDerivedNodeTimeoutHasAFloorAndACap(t *testing.T) {
	c := newCluster(t, 1)
	derived := c.client(t)
	given := c.client(t, redlock.WithNodeTimeout(time.Millisecond))
	for _, tt := range []struct {
		client *redlock.Client
		ttl    time.Duration
		want   time.Duration
	}{
		{derived, 10 * time.Millisecond, 5 * time.Millisecond},
		{derived, 100 * time.Millisecond, 5 * time.Millisecond},
		{derived, time.Second, 50 * time.Millisecond},
		{derived, time.Minute, time.Second},
		{given, 10 * time.Millisecond, time.Millisecond},
	} {
		got, err := redlock.NodeTimeout(tt.client, tt.ttl)
		if err != nil || got != tt.want {
			t.Errorf("node timeout for ttl %v = %v, %v; want %v", tt.ttl, got, err, tt.want)
		}
	}
}

// A TTL that leaves no validity after the drift allowance and a round that
// waits the whole node timeout for a node can never give a lock while a
// node hangs: it is refused before any node is asked.
func TestTTLLeavingNoValidityAfterTheNodeTimeoutIsRefused(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	_, err := client.TryLock(ctx, "k", 7*time.Millisecond)
	checkInvalid(t, err, "redlock: invalid argument: ttl 7ms leaves no validity after the clock-drift allowance of 2.07ms and the node timeout of 5ms")
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys set by a refused lock", n)
	}
	l := mustLock(t, client, "k", time.Minute)
	checkInvalid(t, l.Extend(ctx, 7*time.Millisecond),
		"redlock: invalid argument: ttl 7ms leaves no validity after the clock-drift allowance of 2.07ms and the node timeout of 5ms")
}

// A node that did not answer in time is reported with the timeout it had.
func TestNodeTimeoutErrorNamesTheTimeout(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	c.setFaults(faults.Pass, faults.Hang, faults.Hang)
	_, err := client.TryLock(context.Background(), "k", 10*time.Millisecond)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNodeTimeout) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired with ErrNodeTimeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock = %v, which matches context.DeadlineExceeded although the caller's ctx has no deadline", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "node 1: node timeout 5ms exceeded") {
		t.Errorf("error %q, want node 1 reported with its timeout, 5ms", msg)
	}
}
