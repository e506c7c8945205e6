package interop

import (
	"errors"
	"testing"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// TestRedislockInterop runs locksmith on one node and bsm/redislock, a
// single-node lock, on the same keys.
func TestRedislockInterop(t *testing.T) {
	nodes := redisnode.Start(t, 1, redisnode.Config{})
	rdb := goredis.NewClient(&goredis.Options{Addr: nodes[0].Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	locker := redislock.New(rdb)

	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			client := locktest.Client(t, a, nodes)

			t.Run("locksmith_excludes_redislock", func(t *testing.T) {
				ctx := t.Context()
				key := locktest.Key(t)
				lock, err := client.Lock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("locksmith Lock: %v", err)
				}
				if _, err := locker.Obtain(ctx, key, locktest.TTL, nil); !errors.Is(err, redislock.ErrNotObtained) {
					t.Fatalf("redislock Obtain of a key locksmith holds = %v, want ErrNotObtained", err)
				}
				locktest.RequireHeldBy(t, nodes, key, lock.Value())
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("locksmith Unlock: %v", err)
				}
				rl, err := locker.Obtain(ctx, key, locktest.TTL, nil)
				if err != nil {
					t.Fatalf("redislock Obtain after locksmith's Unlock: %v", err)
				}
				if err := rl.Release(ctx); err != nil {
					t.Fatalf("redislock Release: %v", err)
				}
			})

			t.Run("redislock_excludes_locksmith", func(t *testing.T) {
				ctx := t.Context()
				key := locktest.Key(t)
				rl, err := locker.Obtain(ctx, key, locktest.TTL, nil)
				if err != nil {
					t.Fatalf("redislock Obtain: %v", err)
				}
				if _, err := client.TryLock(ctx, key, locktest.TTL); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("locksmith TryLock of a key redislock holds = %v, want ErrNotAcquired", err)
				}
				locktest.RequireHeldBy(t, nodes, key, rl.Token())
				if err := rl.Release(ctx); err != nil {
					t.Fatalf("redislock Release: %v", err)
				}
				lock, err := client.TryLock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("locksmith TryLock after redislock's Release: %v", err)
				}
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("locksmith Unlock: %v", err)
				}
			})

			// redislock stores its token followed by the lock's metadata;
			// without metadata the value is the token.
			for _, metadata := range []string{"", `{"job":42}`} {
				name := "locksmith_releases_redislock_lock"
				if metadata != "" {
					name += "_with_metadata"
				}
				t.Run(name, func(t *testing.T) {
					ctx := t.Context()
					key := locktest.Key(t)
					rl, err := locker.Obtain(ctx, key, locktest.TTL, &redislock.Options{Metadata: metadata})
					if err != nil {
						t.Fatalf("redislock Obtain: %v", err)
					}
					value := rl.Token() + rl.Metadata()
					if got := nodes[0].Do(t, "GET", key); got != value {
						t.Fatalf("redislock stored %v, want token+metadata %q", got, value)
					}
					if metadata != "" {
						if _, err := client.Resume(ctx, key, rl.Token(), locktest.TTL); !errors.Is(err, redlock.ErrNotHeld) {
							t.Errorf("Resume with the token alone, metadata %q = %v, want ErrNotHeld", metadata, err)
						}
					}
					lock, err := client.Resume(ctx, key, value, 2*locktest.TTL)
					if err != nil {
						t.Fatalf("locksmith Resume with redislock's value: %v", err)
					}
					if err := lock.Unlock(ctx); err != nil {
						t.Fatalf("locksmith Unlock of redislock's lock: %v", err)
					}
					locktest.RequireNoKey(t, nodes, key)
					if err := rl.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
						t.Errorf("redislock Release after locksmith released its lock = %v, want ErrLockNotHeld", err)
					}
				})
			}
		})
	}
}
