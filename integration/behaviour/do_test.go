package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// renewalOptions make automatic renewal of a short lock robust on a slow,
// shared machine: renew with 80% of the TTL left, so that a round that
// times out leaves time for another before the 10% loss margin.
func renewalOptions(nodeTimeout time.Duration) []redlock.Option {
	return []redlock.Option{
		redlock.WithNodeTimeout(nodeTimeout),
		redlock.WithRenewal(0.8, 0.1),
	}
}

// TestDoRenews holds a 300ms lock through Do for 3s: automatic renewal
// keeps it, so a rival trying all along never gets it, and Do releases it
// at the end.
func TestDoRenews(t *testing.T) {
	const (
		ttl  = 300 * time.Millisecond
		hold = 3 * time.Second
	)
	nodes := redisnode.Start(t, sizes[len(sizes)-1], redisnode.Config{})
	for _, size := range sizes {
		t.Run(nodesName(size), func(t *testing.T) {
			for _, a := range adapters.All() {
				t.Run(a.Name, func(t *testing.T) {
					// Mostly waiting: the adapters run side by side.
					t.Parallel()
					nodes := nodes[:size]
					ctx := t.Context()
					// A 300ms TTL leaves room for node timeouts of
					// 100ms: long enough that a busy machine rarely
					// turns a slow reply into a failed renewal.
					holder := locktest.Client(t, a, nodes, renewalOptions(100*time.Millisecond)...)
					rival := locktest.Client(t, a, nodes, redlock.WithNodeTimeout(100*time.Millisecond))
					key := locktest.Key(t)

					rivalWins := make(chan string, 100)
					var value string
					err := holder.Do(ctx, key, ttl, func(ctx context.Context) error {
						value, _ = locktest.Get(t, nodes, key)[0].(string)
						// The rival tries all along while fn runs, and has
						// stopped before fn returns, so any win of its came
						// while Do held the lock.
						stopRival := make(chan struct{})
						rivalDone := make(chan int, 1)
						go func() {
							tries := 0
							for {
								select {
								case <-stopRival:
									rivalDone <- tries
									return
								case <-time.After(20 * time.Millisecond):
								}
								tries++
								if l, err := rival.TryLock(context.Background(), key, ttl); err == nil {
									rivalWins <- l.Value()
									_ = l.Unlock(context.Background())
								}
							}
						}()
						var cause error
						select {
						case <-time.After(hold):
						case <-ctx.Done():
							cause = context.Cause(ctx)
						}
						close(stopRival)
						if tries := <-rivalDone; tries == 0 {
							t.Errorf("the rival made no attempt while Do held the lock")
						}
						return cause
					})
					if err != nil {
						t.Errorf("Do: %v", err)
					}
					close(rivalWins)
					for v := range rivalWins {
						t.Errorf("the rival acquired the lock (value %q) while Do held it", v)
					}
					if value == "" {
						t.Fatalf("the key held no value while fn ran")
					}
					// Do released the lock: no quorum keeps its value. (On a
					// busy machine the release may miss a node, where the
					// key then expires.)
					if got, q := locktest.Holding(t, nodes, key, value), locktest.Quorum(len(nodes)); got >= q {
						t.Errorf("after Do, %d of %d nodes still hold its value", got, len(nodes))
					}
				})
			}
		})
	}
}

// TestDoLockLost deletes the key on a majority while Do holds it: the next
// renewal finds it gone, fn's context is cancelled with ErrLockLost, Do
// returns it, and the key is not created again.
func TestDoLockLost(t *testing.T) {
	const ttl = time.Second
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		ctx := t.Context()
		client := locktest.Client(t, a, nodes, renewalOptions(100*time.Millisecond)...)
		key := locktest.Key(t)
		q := locktest.Quorum(len(nodes))

		var cause error
		fnErr := errors.New("fn gave up")
		err := client.Do(ctx, key, ttl, func(ctx context.Context) error {
			locktest.Settle(t) // no acquire request may set the key again
			for _, n := range nodes[:q] {
				n.Do(t, "DEL", key)
			}
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-time.After(30 * time.Second):
				t.Errorf("fn's context was not cancelled after the key was deleted on %d of %d nodes", q, len(nodes))
			}
			return fnErr
		})
		if !errors.Is(cause, redlock.ErrLockLost) || !errors.Is(cause, redlock.ErrNotHeld) {
			t.Errorf("cause of fn's cancelled context = %v, want ErrLockLost (which matches ErrNotHeld)", cause)
		}
		if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, fnErr) {
			t.Errorf("Do = %v, want fn's error joined with ErrLockLost", err)
		}
		locktest.RequireNoKey(t, nodes, key)
	})
}
