package redlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/fencecheck"
	"github.com/locksmith-go/locksmith/redlock"
)

func TestFencedLock(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing())
	ctx := context.Background()
	var last uint64
	for i := range 5 {
		l := mustLock(t, client, "doc", time.Minute)
		if l.Token() <= last {
			t.Errorf("lock %d: token %d not above the previous %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Extend(ctx, time.Minute); err != nil || l.Token() != last {
			t.Errorf("Extend = %v, token %d -> %d; want nil and the same token", err, last, l.Token())
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		// Every node takes part in the next lock: a release still on
		// its way would have a node refuse it and keep its counter.
		c.settle(t)
	}
	for i, s := range c.servers {
		if got, _ := s.Get("{doc}:fencing-token"); got != strconv.FormatUint(last, 10) {
			t.Errorf("node %d: counter = %q, want %d", i, got, last)
		}
		if ttl := s.TTL("{doc}:fencing-token"); ttl != 0 {
			t.Errorf("node %d: counter has TTL %v, want none", i, ttl)
		}
		if s.Exists("doc") {
			t.Errorf("node %d: lock key left after Unlock", i)
		}
	}
	// A plain client on the same nodes does not fence.
	plain := mustLock(t, c.client(t), "doc", time.Minute)
	if plain.Token() != 0 {
		t.Errorf("unfenced lock has token %d, want 0", plain.Token())
	}
	plain.Unlock(ctx)
}

func TestFencedLockAfterCounterLossOnAMinority(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing())
	ctx := context.Background()
	for range 3 {
		mustLock(t, client, "doc", time.Minute).Unlock(ctx)
		// Every node takes part in the next lock, so that every node
		// has the counter (a round is decided by a quorum alone).
		c.settle(t)
	}
	// One node forgets its counter: the quorum still remembers 3.
	c.servers[0].Del("{doc}:fencing-token")
	l := mustLock(t, client, "doc", time.Minute)
	if l.Token() != 4 {
		t.Errorf("token after a minority lost its counter = %d, want 4", l.Token())
	}
	l.Unlock(ctx)
}

func TestFencedMultiKeyLockSharesOneToken(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing())
	ctx := context.Background()
	for range 4 {
		mustLock(t, client, "b", time.Minute).Unlock(ctx)
		c.settle(t)
	}
	l, err := client.LockMulti(ctx, []string{"a", "b"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != 5 {
		t.Errorf("token over a (never locked) and b (locked 4 times) = %d, want 5", l.Token())
	}
	for _, key := range []string{"{a}:fencing-token", "{b}:fencing-token"} {
		if got, _ := c.servers[1].Get(key); got != "5" {
			t.Errorf("%s = %q, want 5", key, got)
		}
	}
	l.Unlock(ctx)
}

func TestFencedLockRejectsKeysWithoutASlot(t *testing.T) {
	c := newCluster(t, 1)
	_, err := c.client(t, redlock.WithFencing()).Lock(context.Background(), "a}b", time.Minute)
	checkInvalid(t, err, `redlock: invalid argument: fenced key "a}b" has no hash tag and contains '}', so no counter key can share its hash slot; give it a hash tag such as "{ab}"`)
}

// TestFencingTokensAreMonotonicUnderMinorityFaults takes fenced locks on a
// few resources from many goroutines while random minorities of five
// in-process nodes fail, lose replies, slow down or hang, and some holders
// let their locks expire. The integration tests run the same history with
// more grants over real servers.
func TestFencingTokensAreMonotonicUnderMinorityFaults(t *testing.T) {
	seed, err := fencecheck.SeedFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	// In-process nodes under the race detector are slow; the
	// integration tests run 10,000 grants over real servers.
	grantCount, err := fencecheck.GrantsFromEnv(40)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 5)
	// Node timeouts long enough that a loaded machine does not turn slow
	// in-process replies into failed rounds; hangs are rare in Scramble.
	client := c.client(t, redlock.WithFencing(),
		redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 10*time.Millisecond, 1000)))
	run := fencecheck.Run{
		Resources: []string{"r0", "r1"},
		Workers:   3,
		Grants:    grantCount,
		Seed:      seed,
		TickEvery: flapEvery,
		Abandon:   0.03,
		Tick:      flap(c),
	}
	grants, err := run.Collect(fencedLocker(client, time.Second))
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
	for resource, gs := range grants {
		for _, g := range gs {
			if g.Token == 0 {
				t.Errorf("%s: a fenced grant has token 0", resource)
				break
			}
		}
	}
	t.Logf("seed %d: %d fenced grants over %d resources, %d violations", seed, total, len(grants), len(violations))
	if total < run.Grants {
		t.Errorf("only %d grants, want %d", total, run.Grants)
	}
}

// flapEvery is how often flap changes the faults.
const flapEvery = 5 * time.Millisecond

// flap returns a fencecheck.Run Tick that moves the clock of c's nodes on
// by flapEvery, since in-process nodes only expire keys when told that
// time has passed, and gives up to two of them a new random fault
// (faults.Scramble); at the end it clears the faults.
func flap(c *cluster) func(rng *rand.Rand, stop bool) {
	return func(rng *rand.Rand, stop bool) {
		if stop {
			faults.Reset(c.faults)
			return
		}
		for _, s := range c.servers {
			s.FastForward(flapEvery)
		}
		faults.Scramble(rng, c.faults, 2)
	}
}

// naiveTokens is the tempting but wrong scheme: every node that grants
// increments its counter, and the token is the largest result.
type naiveTokens struct{ counters []uint64 }

func (n *naiveTokens) grant(quorum ...int) uint64 {
	var token uint64
	for _, i := range quorum {
		n.counters[i]++
		token = max(token, n.counters[i])
	}
	return token
}

func TestNaiveMaxOfIncrementsFailsTheChecker(t *testing.T) {
	// Three nodes A, B, C; each grant is made by the two nodes named,
	// one after another. The fourth grant, by B and C, computes 3 though
	// the third already handed out 3.
	naive := &naiveTokens{counters: make([]uint64, 3)}
	const a, b, c = 0, 1, 2
	var grants []fencecheck.Grant
	clock := time.Now()
	for _, quorum := range [][]int{{a, b}, {a, c}, {a, b}, {b, c}} {
		start := clock.Add(time.Millisecond)
		clock = start.Add(time.Millisecond)
		grants = append(grants, fencecheck.Grant{Start: start, End: clock, Token: naive.grant(quorum...)})
	}
	violations := fencecheck.Check(grants)
	if len(violations) == 0 {
		t.Fatalf("the checker accepted the naive tokens %v", grants)
	}
	t.Logf("naive max-of-INCR: %d violations over %d grants: %v", len(violations), len(grants), violations)

	// The same sequence of quorums through the real two-phase scheme.
	// Every grant must be sent to all three nodes, the failing one too.
	cl := newCluster(t, 3)
	client := cl.client(t, redlock.WithFencing(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false))
	grants = nil
	for _, quorum := range [][]int{{a, b}, {a, c}, {a, b}, {b, c}} {
		for i, f := range cl.faults {
			if !slices.Contains(quorum, i) {
				f.Set(faults.Fail)
			}
		}
		start := time.Now()
		l, err := client.TryLock(context.Background(), "r", time.Minute)
		if err != nil {
			t.Fatalf("fenced TryLock on nodes %v: %v", quorum, err)
		}
		grants = append(grants, fencecheck.Grant{Start: start, End: time.Now(), Token: l.Token()})
		l.Unlock(context.Background())
		for _, f := range cl.faults {
			f.Set(faults.Pass)
		}
	}
	if v := fencecheck.Check(grants); len(v) != 0 {
		t.Errorf("fenced tokens over the same quorums violate: %v", v)
	}
}

func TestFencingErrorsAreQuorumErrors(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing(), redlock.WithNodeTimeout(testNodeTimeout))
	// Phase 2 fails on two nodes: the grant must not be handed out, and
	// phase 1's keys are cleaned up. On each of them calls 1 and 2 (SCRIPT
	// LOAD, phase 1) pass, 3 and 4 (SCRIPT LOAD, then EVAL of phase 2)
	// fail, and the cleanup's calls pass again.
	for _, f := range c.faults[:2] {
		calls := 0
		f.OnCall(func(string) {
			calls++
			if calls == 3 || calls == 4 {
				f.Set(faults.Fail)
			} else {
				f.Set(faults.Pass)
			}
		})
	}
	_, err := client.TryLock(context.Background(), "r", time.Minute)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) {
		t.Fatalf("TryLock with phase 2 failing on a majority = %v, want a *QuorumError", err)
	}
	for _, f := range c.faults[:2] {
		f.OnCall(nil)
	}
	c.setFaults(faults.Pass, faults.Pass)
	c.settle(t)
	for i, s := range c.servers {
		if s.Exists("r") {
			t.Errorf("node %d: lock key left after a failed phase 2", i)
		}
	}
}

// fencedLocker takes fenced locks of the given TTL from client, for
// fencecheck.Run.Collect.
func fencedLocker(client *redlock.Client, ttl time.Duration) (fencecheck.Acquirer, func(error) bool) {
	return fencecheck.Locker(func(ctx context.Context, resource string) (*redlock.Lock, error) {
		return client.Lock(ctx, resource, ttl)
	}, redlock.ErrInvalidArgument)
}
