package interop

import (
	"errors"
	"testing"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// newRedsync returns a redsync instance over nodes, each through a go-redis
// v9 client.
func newRedsync(t *testing.T, nodes []*redisnode.Node) *redsync.Redsync {
	t.Helper()
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		client := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		t.Cleanup(func() { _ = client.Close() })
		pools[i] = redsyncgoredis.NewPool(client)
	}
	return redsync.New(pools...)
}

// TestRedsyncInterop runs locksmith and redsync on the same keys of three
// nodes.
func TestRedsyncInterop(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	rs := newRedsync(t, nodes)
	mutex := func(key string) *redsync.Mutex {
		return rs.NewMutex(key, redsync.WithExpiry(locktest.TTL), redsync.WithTries(1))
	}
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			client := locktest.Client(t, a, nodes)

			t.Run("locksmith_excludes_redsync", func(t *testing.T) {
				ctx := t.Context()
				key := locktest.Key(t)
				lock, err := client.Lock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("locksmith Lock: %v", err)
				}
				m := mutex(key)
				if err := m.TryLockContext(ctx); err == nil {
					t.Fatalf("redsync TryLock succeeded on a key locksmith holds")
				}
				locktest.RequireHeldBy(t, nodes, key, lock.Value())
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("locksmith Unlock: %v", err)
				}
				if err := m.TryLockContext(ctx); err != nil {
					t.Fatalf("redsync TryLock after locksmith's Unlock: %v", err)
				}
				locktest.RequireHeldBy(t, nodes, key, m.Value())
				if ok, err := m.UnlockContext(ctx); !ok || err != nil {
					t.Fatalf("redsync Unlock = %v, %v", ok, err)
				}
				locktest.RequireNoKey(t, nodes, key)
			})

			t.Run("redsync_excludes_locksmith", func(t *testing.T) {
				ctx := t.Context()
				key := locktest.Key(t)
				m := mutex(key)
				if err := m.LockContext(ctx); err != nil {
					t.Fatalf("redsync Lock: %v", err)
				}
				_, err := client.TryLock(ctx, key, locktest.TTL)
				if !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("locksmith TryLock of a key redsync holds = %v, want ErrNotAcquired", err)
				}
				var qe *redlock.QuorumError
				if !errors.As(err, &qe) || qe.Refused < locktest.Quorum(len(nodes)) || qe.Granted != 0 {
					t.Errorf("locksmith TryLock: %v, want a quorum of the %d nodes refusing", err, len(nodes))
				}
				locktest.RequireHeldBy(t, nodes, key, m.Value())
				if ok, err := m.UnlockContext(ctx); !ok || err != nil {
					t.Fatalf("redsync Unlock = %v, %v", ok, err)
				}
				lock, err := client.TryLock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("locksmith TryLock after redsync's Unlock: %v", err)
				}
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("locksmith Unlock: %v", err)
				}
			})

			t.Run("locksmith_releases_redsync_lock", func(t *testing.T) {
				ctx := t.Context()
				key := locktest.Key(t)
				m := mutex(key)
				if err := m.LockContext(ctx); err != nil {
					t.Fatalf("redsync Lock: %v", err)
				}
				lock, err := client.Resume(ctx, key, m.Value(), 2*locktest.TTL)
				if err != nil {
					t.Fatalf("locksmith Resume with redsync's value: %v", err)
				}
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("locksmith Unlock of redsync's lock: %v", err)
				}
				locktest.RequireNoKey(t, nodes, key)
				if ok, _ := m.UnlockContext(ctx); ok {
					t.Errorf("redsync Unlock succeeded after locksmith released its lock")
				}
				if err := mutex(key).TryLockContext(ctx); err != nil {
					t.Errorf("redsync TryLock after the release: %v", err)
				}
			})
		})
	}
}
