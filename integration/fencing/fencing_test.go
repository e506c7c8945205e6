package fencing

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/fencecheck"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// TestTokensUnderMinorityFaults takes fenced locks on four resources from
// twelve goroutines through five real servers, while every 5ms a random
// minority of the nodes starts failing, losing replies, slowing down or
// hanging, and some holders let their locks expire. Every resource's
// grants must satisfy P1 and P2 (package fencecheck).
func TestTokensUnderMinorityFaults(t *testing.T) {
	seed, err := fencecheck.SeedFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	grantCount, err := fencecheck.GrantsFromEnv(10_000)
	if err != nil {
		t.Fatal(err)
	}
	nodes := redisnode.Start(t, 5, redisnode.Config{})
	// The lightest client keeps this long history affordable under the
	// race detector; the adapters are covered by the other tests.
	var wrapped []*faults.Conn
	var conns []driver.Conn
	for _, n := range nodes {
		rc := resp.Dial(n.Addr())
		t.Cleanup(func() { rc.Close() })
		f := faults.Wrap(rc)
		wrapped = append(wrapped, f)
		conns = append(conns, f)
	}
	// Waiters poll every 5-10ms. At 1-5ms, two of a resource's three
	// workers are always mid-attempt: each refused attempt still takes
	// keys on some nodes, and a release lost to a fault leaves them for
	// the TTL, so faster polling took more than twice the attempts per
	// grant (33 against 13 at 1,000 grants) and twice the time under
	// the race detector, for the same faults and contention.
	client := locktest.NewClient(t, conns, redlock.WithFencing(),
		redlock.WithNodeTimeout(25*time.Millisecond),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(5*time.Millisecond, 5*time.Millisecond, 1000)))
	run := fencecheck.Run{
		Resources: []string{locktest.Key(t) + ":a", locktest.Key(t) + ":b", locktest.Key(t) + ":c", locktest.Key(t) + ":d"},
		Workers:   3,
		Grants:    grantCount,
		Seed:      seed,
		TickEvery: 5 * time.Millisecond,
		Abandon:   0.02,
		Tick: func(rng *rand.Rand, stop bool) {
			if stop {
				faults.Reset(wrapped)
				return
			}
			faults.Scramble(rng, wrapped, 2)
		},
	}
	start := time.Now()
	grants, err := run.Collect(fencecheck.Locker(func(ctx context.Context, resource string) (*redlock.Lock, error) {
		return client.Lock(ctx, resource, 300*time.Millisecond)
	}, redlock.ErrInvalidArgument))
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	total, violations := fencecheck.Report(grants)
	for i, v := range violations {
		if i == 5 {
			t.Errorf("seed %d: ... and %d more", seed, len(violations)-5)
			break
		}
		t.Errorf("seed %d: %s", seed, v)
	}
	t.Logf("seed %d (%s backend): %d fenced grants over %d resources in %v, %d violations",
		seed, nodes[0].Backend(), total, len(grants), time.Since(start).Round(time.Second), len(violations))
	if total < run.Grants {
		t.Errorf("only %d grants, want %d", total, run.Grants)
	}
}

// TestCountersSurviveRestart restarts every node, running with
// appendfsync always, between fenced grants: the next token is still
// above the last one.
func TestCountersSurviveRestart(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{AppendOnly: true, AppendFsync: "always"})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			ctx := context.Background()
			key := locktest.Key(t)
			var last uint64
			for round := range 3 {
				client := locktest.Client(t, a, nodes, redlock.WithFencing(), redlock.WithNodeTimeout(250*time.Millisecond))
				for range 3 {
					l, err := client.Lock(ctx, key, locktest.TTL)
					if err != nil {
						t.Fatalf("round %d: Lock: %v", round, err)
					}
					if l.Token() <= last {
						t.Errorf("round %d: token %d not above the previous %d", round, l.Token(), last)
					}
					last = l.Token()
					if err := l.Unlock(ctx); err != nil {
						t.Fatalf("round %d: Unlock: %v", round, err)
					}
				}
				for _, n := range nodes {
					n.Kill(t)
					n.Restart(t)
				}
			}
		})
	}
}
