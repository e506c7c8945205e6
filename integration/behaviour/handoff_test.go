package behaviour

import (
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// TestHandoffAcrossAdapters has a waiter on one adapter woken by a release
// made through another: the waiter retries only once an hour, so getting
// the lock at all proves the notification reached it. Every ordered pair of
// different adapters runs, on 3 nodes.
func TestHandoffAcrossAdapters(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	for _, waiting := range adapters.All() {
		for _, releasing := range adapters.All() {
			if waiting.Name == releasing.Name {
				continue
			}
			t.Run(waiting.Name+"_woken_by_"+releasing.Name, func(t *testing.T) {
				key := locktest.Key(t)
				holder := locktest.Client(t, releasing, nodes)
				held, err := holder.Lock(t.Context(), key, locktest.TTL)
				if err != nil {
					t.Fatalf("holder's Lock: %v", err)
				}
				w := locktest.StartWaiter(t, locktest.Conns(t, waiting, nodes), key)
				w.AwaitWaiting(t, nodes, key)
				lock := w.HandOver(t, held)
				// The waiter tries once a majority announced the
				// release, so the last node may still have refused it.
				if got := locktest.Holding(t, nodes, key, lock.Value()); got < locktest.Quorum(len(nodes)) {
					t.Errorf("%d of %d nodes hold the waiter's value, want a majority", got, len(nodes))
				}
				if err := lock.Unlock(t.Context()); err != nil {
					t.Errorf("waiter's Unlock: %v", err)
				}
				locktest.RequireNoKey(t, nodes, key)
			})
		}
	}
}
