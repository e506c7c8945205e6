package behaviour

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// multiKeys returns n resource names sharing a hash tag, as a multi-key
// lock on a Redis Cluster needs; plain servers do not care.
func multiKeys(t *testing.T, n int) []string {
	t.Helper()
	tag := "{" + locktest.Key(t) + "}:"
	keys := make([]string, n)
	for i := range keys {
		keys[i] = tag + string(rune('a'+i))
	}
	return keys
}

// TestLockMultiAllOrNothing checks that a lock over several keys takes all
// of them or none on every node.
func TestLockMultiAllOrNothing(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		first := locktest.Client(t, a, nodes)
		second := locktest.Client(t, a, nodes)
		keys := multiKeys(t, 4)
		abc, cd := keys[:3], keys[2:]

		lock, err := first.LockMulti(ctx, abc, locktest.TTL)
		if err != nil {
			t.Fatalf("LockMulti: %v", err)
		}
		if !slices.Equal(lock.Keys(), abc) {
			t.Errorf("Keys() = %q, want %q", lock.Keys(), abc)
		}
		for _, k := range abc {
			if got := locktest.Holding(t, nodes, k, lock.Value()); got != len(nodes) {
				t.Errorf("%s: %d of %d nodes hold the lock's value, want all", k, got, len(nodes))
			}
		}

		// An overlap on one key fails without taking the free one.
		_, err = second.TryLockMulti(ctx, cd, locktest.TTL)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLockMulti overlapping a held key = %v, want ErrNotAcquired", err)
		}
		if qe := quorumError(t, err); qe.Refused != len(nodes) {
			t.Errorf("overlapping TryLockMulti: Refused %d, want %d", qe.Refused, len(nodes))
		}
		locktest.RequireNoKey(t, nodes, keys[3])

		const longer = 3 * locktest.TTL
		if err := lock.Extend(ctx, longer); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		for _, k := range abc {
			for i, n := range nodes {
				if pttl := locktest.PTTL(t, n, k); pttl <= locktest.TTL {
					t.Errorf("node %d: PTTL %s after Extend(%v) = %v, want above %v", i, k, longer, pttl, locktest.TTL)
				}
			}
		}
		if err := lock.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		for _, k := range keys {
			locktest.RequireNoKey(t, nodes, k)
		}
		again, err := second.TryLockMulti(ctx, cd, locktest.TTL)
		if err != nil {
			t.Fatalf("TryLockMulti after Unlock: %v", err)
		}
		if err := again.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})
}

// TestLockMultiPartialNode has another owner hold one of the keys on one
// node only: that node grants none of the keys, the others grant all, and
// the lock is granted exactly when they are a quorum.
func TestLockMultiPartialNode(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		client := locktest.Client(t, a, nodes)
		keys := multiKeys(t, 2)
		nodes[0].Do(t, "SET", keys[1], "another-owner", "PX", 60000)

		lock, err := client.TryLockMulti(ctx, keys, locktest.TTL)
		wantGranted := len(nodes)-1 >= locktest.Quorum(len(nodes))
		switch {
		case wantGranted && err != nil:
			t.Fatalf("TryLockMulti with one key taken on one of %d nodes: %v", len(nodes), err)
		case !wantGranted && !errors.Is(err, redlock.ErrNotAcquired):
			t.Fatalf("TryLockMulti with one key taken on the only node = %v, want ErrNotAcquired", err)
		}
		if got := nodes[0].Do(t, "GET", keys[1]); got != "another-owner" {
			t.Errorf("node 0: %s = %v, want the other owner's value", keys[1], got)
		}
		locktest.RequireNoKey(t, nodes[:1], keys[0])
		if wantGranted {
			for _, k := range keys {
				if got := locktest.Holding(t, nodes[1:], k, lock.Value()); got != len(nodes)-1 {
					t.Errorf("%s: %d of the %d other nodes hold the lock, want all", k, got, len(nodes)-1)
				}
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			locktest.RequireNoKey(t, nodes[1:], keys[0])
			if got := nodes[0].Do(t, "GET", keys[1]); got != "another-owner" {
				t.Errorf("node 0 after Unlock: %s = %v, want the other owner's value", keys[1], got)
			}
		}
	})
}

// TestDoMulti runs fn under a lock over several keys and releases all of
// them afterwards.
func TestDoMulti(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		client := locktest.Client(t, a, nodes)
		keys := multiKeys(t, 3)
		ran := false
		err := client.DoMulti(t.Context(), keys, locktest.TTL, func(ctx context.Context) error {
			ran = true
			for _, k := range keys {
				values := locktest.Get(t, nodes, k)
				if values[0] == nil || slices.ContainsFunc(values, func(v any) bool { return v != values[0] }) {
					t.Errorf("while fn runs, %s has values %v on the nodes, want one value everywhere", k, values)
				}
			}
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("DoMulti = %v, fn ran: %v", err, ran)
		}
		for _, k := range keys {
			locktest.RequireNoKey(t, nodes, k)
		}
	})
}
