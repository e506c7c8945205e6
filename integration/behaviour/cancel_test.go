package behaviour

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// TestCancelledLockLeavesNoKey cancels Lock calls before they start, while
// they wait between attempts and while a node is still working on an
// attempt: each call reports the cancellation and no node keeps a key of
// the caller.
func TestCancelledLockLeavesNoKey(t *testing.T) {
	forEachSetup(t, func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node) {
		client := locktest.Client(t, a, nodes, redlock.WithRetryStrategy(redlock.ConstantBackoff(10*time.Millisecond, 10*time.Millisecond, 1000)))
		q := locktest.Quorum(len(nodes))
		checkErr := func(t *testing.T, err error) {
			t.Helper()
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled Lock = %v, want an error matching both ErrNotAcquired and context.Canceled", err)
			}
		}

		t.Run("before_the_call", func(t *testing.T) {
			key := locktest.Key(t)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := client.Lock(ctx, key, locktest.TTL)
			checkErr(t, err)
			locktest.RequireNoKey(t, nodes, key)
		})

		t.Run("between_attempts", func(t *testing.T) {
			// Another owner holds the key on a quorum, so every attempt
			// fails after the other nodes granted it.
			key := locktest.Key(t)
			for _, n := range nodes[:q] {
				n.Do(t, "SET", key, "another-owner", "PX", 60000)
			}
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(150*time.Millisecond, cancel)
			_, err := client.Lock(ctx, key, locktest.TTL)
			checkErr(t, err)
			locktest.RequireNoKey(t, nodes[q:], key)
			if got := locktest.Holding(t, nodes, key, "another-owner"); got != q {
				t.Errorf("%d nodes keep the other owner's key, want %d", got, q)
			}
		})

		t.Run("during_an_attempt", func(t *testing.T) {
			// The last node is busy, so the attempt is still waiting for
			// it when the caller gives up; another owner holds enough
			// of the rest that the free nodes alone make no quorum. The
			// node timeout outlasts the busy spell, so the release that
			// follows the cancellation reaches the busy node too.
			slow := locktest.Client(t, a, nodes, redlock.WithNodeTimeout(5*time.Second), redlock.WithRetryStrategy(redlock.NoRetry()))
			// Load the scripts first, so the attempt sends its acquire
			// request to the busy node at once.
			warm, err := slow.Lock(t.Context(), locktest.Key(t), locktest.TTL)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if err := warm.Unlock(t.Context()); err != nil {
				t.Fatalf("Unlock: %v", err)
			}

			key := locktest.Key(t)
			last := len(nodes) - 1
			foreign := nodes[q-1 : last]
			for _, n := range foreign {
				n.Do(t, "SET", key, "another-owner", "PX", 60000)
			}
			busyDone := locktest.Busy(t, nodes[last], 600*time.Millisecond)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			_, err = slow.Lock(ctx, key, locktest.TTL)
			checkErr(t, err)
			if err := <-busyDone; err != nil {
				t.Fatalf("busy script: %v", err)
			}
			locktest.RequireNoKey(t, append(nodes[:q-1:q-1], nodes[last]), key)
			if got := locktest.Holding(t, foreign, key, "another-owner"); got != len(foreign) {
				t.Errorf("%d of %d nodes keep the other owner's key", got, len(foreign))
			}
		})
	})
}

// TestCancelAtRandomLeavesNoLastingKey cancels Lock calls at random
// moments. A cancelled call releases what it set, but a request still in
// flight when the call gave up can reach a node after that release, as it
// can for any client; the key it sets must then be one that expires, within
// the lock's TTL, and be gone once the TTL has passed.
func TestCancelAtRandomLeavesNoLastingKey(t *testing.T) {
	const calls = 400
	const ttl = time.Second
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			client := locktest.Client(t, a, nodes, redlock.WithNodeTimeout(250*time.Millisecond))
			prefix := locktest.Key(t)
			granted := 0
			for i := range calls {
				key := fmt.Sprintf("%s:%d", prefix, i)
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(time.Duration(rand.Int64N(int64(2*time.Millisecond))), cancel)
				lock, err := client.Lock(ctx, key, ttl)
				cancel()
				switch {
				case err == nil:
					granted++
					if err := lock.Unlock(t.Context()); err != nil {
						t.Errorf("call %d: Unlock: %v", i, err)
					}
				case !errors.Is(err, context.Canceled):
					t.Errorf("call %d: Lock = %v, want success or an error matching context.Canceled", i, err)
				}
			}
			late := 0
			for i, n := range nodes {
				for _, key := range locktest.Keys(t, n, prefix+":*") {
					late++
					// -2: the key expired since the scan, as it
					// should; 0: it expires within this
					// millisecond. -1 (no expiry) is the failure.
					if pttl := locktest.PTTL(t, n, key); pttl != -2 && (pttl < 0 || pttl > ttl) {
						t.Errorf("node %d: key %s of a cancelled call has TTL %v, want one in [0, %v]", i, key, pttl, ttl)
					}
				}
			}
			time.Sleep(ttl + 100*time.Millisecond)
			for i, n := range nodes {
				if keys := locktest.Keys(t, n, prefix+":*"); len(keys) > 0 {
					t.Errorf("node %d keeps %d keys of cancelled calls after their TTL: %q", i, len(keys), keys)
				}
			}
			t.Logf("%d of %d calls were granted before their cancellation; %d keys set by late requests expired", granted, calls, late)
		})
	}
}
