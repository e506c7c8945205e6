package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// The keys of the semaphore "sem" of these tests.
const (
	semRecord = "{sem}:limit"
)

func semSlot(i int) string { return fmt.Sprintf("{sem}:permit:%d", i) }

// inOrder returns a slot order for redlock.SetSlotOrder.
func inOrder(slots ...int) func(int) []int {
	return func(int) []int { return slices.Clone(slots) }
}

// mustSemaphore returns the semaphore "sem" of client with limit.
func mustSemaphore(t *testing.T, client *redlock.Client, limit int) *redlock.Semaphore {
	t.Helper()
	s, err := client.Semaphore("sem", limit)
	if err != nil {
		t.Fatalf("Semaphore: %v", err)
	}
	return s
}

// scheduleClient returns a Client of c that sends every request to every
// node, so that a node failed on purpose is never skipped, and that makes
// one attempt per call.
func scheduleClient(t *testing.T, c *cluster, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return c.client(t, append([]redlock.Option{redlock.WithSkipUnhealthyNodes(false),
		redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry())}, opts...)...)
}

// onlyOn runs acquire while every node of c but those of on fails.
func onlyOn(c *cluster, on []int, acquire func() error) error {
	for i, f := range c.faults {
		if slices.Contains(on, i) {
			f.Set(faults.Pass)
		} else {
			f.Set(faults.Fail)
		}
	}
	defer c.setFaults(faults.Pass, faults.Pass, faults.Pass)
	return acquire()
}

// naiveAcquire is the unsafe design, kept here to show that the schedule
// below defeats it: each node admits at most 2 live members of a sorted
// set scored by the node's own expiry, and a holder needs a majority.
const naiveAcquire = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) < 2 then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0
`

const naiveRelease = `
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`

// The schedule of the counterexample: 3 nodes A, B, C, a limit of 2,
// holder X admitted on {A,B}, Y on {B,C}, Z on {A,C}. A per-node limit of
// 2 admits all three; the semaphore admits X and Y and refuses Z, in
// either slot order.
func TestSemaphoreThreeHolderSchedule(t *testing.T) {
	schedule := [][]int{{0, 1}, {1, 2}, {0, 2}}

	t.Run("naive per-node limit admits 3", func(t *testing.T) {
		c := newCluster(t, 3)
		naive := redlock.WithScripts(redlock.Scripts{
			Acquire: func(string) string { return naiveAcquire },
			Release: func(string) string { return naiveRelease },
		})
		var holders []*redlock.Lock
		for i, on := range schedule {
			client := scheduleClient(t, c, naive)
			err := onlyOn(c, on, func() error {
				l, err := client.TryLock(context.Background(), "naive", time.Minute)
				if l != nil {
					holders = append(holders, l)
				}
				return err
			})
			if err != nil {
				t.Fatalf("holder %d on nodes %v: %v", i, on, err)
			}
		}
		c.settle(t)
		for i, s := range c.servers {
			members, err := s.ZMembers("naive")
			if err != nil || len(members) != 2 {
				t.Errorf("node %d holds %v (%v), want 2 members", i, members, err)
			}
		}
		if len(holders) != 3 {
			t.Errorf("%d holders, want the 3 that show the design unsafe", len(holders))
		}
	})

	t.Run("semaphore admits 2", func(t *testing.T) {
		c := newCluster(t, 3)
		// X takes slot 0 on {A,B}. Y prefers slot 1, which B and C grant.
		// Z finds slot 1 free on A and slot 0 free on C, whatever its
		// order: no slot reaches a quorum.
		orders := [][]int{{0, 1}, {1, 0}, {0, 1}, {1, 0}}
		ons := [][]int{schedule[0], schedule[1], schedule[2], schedule[2]}
		var held []*redlock.Lock
		for i := range orders {
			client := scheduleClient(t, c)
			sem := mustSemaphore(t, client, 2)
			redlock.SetSlotOrder(sem, inOrder(orders[i]...))
			err := onlyOn(c, ons[i], func() error {
				l, err := sem.TryAcquire(context.Background(), time.Minute)
				if l != nil {
					held = append(held, l)
				}
				return err
			})
			switch {
			case i < 2 && err != nil:
				t.Fatalf("holder %d on nodes %v: %v", i, ons[i], err)
			case i >= 2 && !errors.Is(err, redlock.ErrNotAcquired):
				t.Errorf("third holder on nodes %v in order %v: %v, want ErrNotAcquired", ons[i], orders[i], err)
			}
		}
		c.settle(t)
		if len(held) != 2 || held[0].Key() != semSlot(0) || held[1].Key() != semSlot(1) {
			t.Fatalf("held %v, want slots 0 and 1", keysOf(held))
		}
		// The nodes' own state: X on A and B, Y on B and C, and nothing of
		// Z's attempts left anywhere.
		want := [][]string{{held[0].Value(), ""}, {held[0].Value(), held[1].Value()}, {"", held[1].Value()}}
		for i, s := range c.servers {
			for slot := range 2 {
				got, _ := s.Get(semSlot(slot))
				if got != want[i][slot] {
					t.Errorf("node %d slot %d holds %.8q, want %.8q", i, slot, got, want[i][slot])
				}
			}
		}
	})
}

func keysOf(locks []*redlock.Lock) []string {
	var keys []string
	for _, l := range locks {
		keys = append(keys, l.Key())
	}
	return keys
}

// slotsHolding returns, for each node, how many of the first n slots hold
// value.
func (c *cluster) slotsHolding(n int, value string) []int {
	counts := make([]int, len(c.servers))
	for i, s := range c.servers {
		for slot := range n {
			if got, err := s.Get(semSlot(slot)); err == nil && got == value {
				counts[i]++
			}
		}
	}
	return counts
}

// A request applied twice (a Redis client re-sending it) or applied with
// its reply lost claims one slot, the one the permit holds, and Unlock
// leaves no slot behind.
func TestSemaphoreResentRequestClaimsOneSlot(t *testing.T) {
	for _, tt := range []struct {
		name  string
		modes []faults.Mode
	}{
		{"applied twice everywhere", []faults.Mode{faults.Duplicate, faults.Duplicate, faults.Duplicate}},
		{"reply lost on one node", []faults.Mode{faults.Pass, faults.LoseReply, faults.Pass}},
		{"both", []faults.Mode{faults.Duplicate, faults.LoseReply, faults.Duplicate}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3)
			client := scheduleClient(t, c)
			// Another permit holds slot 0, so that a second claim would
			// find a free slot to take.
			other := mustAcquire(t, mustSemaphore(t, client, 3))
			c.setFaults(tt.modes...)
			l := mustAcquire(t, mustSemaphore(t, client, 3))
			c.setFaults(faults.Pass, faults.Pass, faults.Pass)
			c.settle(t)
			if got := c.slotsHolding(3, l.Value()); !slices.Equal(got, []int{1, 1, 1}) {
				t.Errorf("slots holding the permit's value per node = %v, want one on each", got)
			}
			for _, p := range []*redlock.Lock{l, other} {
				if err := p.Unlock(context.Background()); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			}
			c.settle(t)
			for i, s := range c.servers {
				for slot := range 3 {
					if s.Exists(semSlot(slot)) {
						t.Errorf("node %d: slot %d left after Unlock", i, slot)
					}
				}
			}
		})
	}
}

func mustAcquire(t *testing.T, s *redlock.Semaphore) *redlock.Lock {
	t.Helper()
	l, err := s.TryAcquire(context.Background(), time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return l
}

// An attempt whose nodes split the free slots, so that no slot reaches a
// quorum, releases every slot it claimed on every node. The limit record
// it wrote expires with the attempt's TTL.
func TestSemaphoreFailedAttemptLeavesNoSlot(t *testing.T) {
	c := newCluster(t, 3)
	c.servers[0].Set(semSlot(0), "other")
	c.servers[1].Set(semSlot(1), "other")
	client := scheduleClient(t, c)
	sem := mustSemaphore(t, client, 2)
	redlock.SetSlotOrder(sem, inOrder(0, 1))
	// Node A claims slot 1, node B slot 0, node C fails.
	c.faults[2].Set(faults.Fail)
	_, err := sem.TryAcquire(context.Background(), time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired", err)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Granted != 1 || qe.Refused != 1 || len(qe.Errors) != 1 {
		t.Errorf("TryAcquire = %v, want 1 granted, 1 refused (the other slot), 1 failed", err)
	}
	c.faults[2].Set(faults.Pass)
	c.settle(t)
	want := [][]string{{"other", ""}, {"", "other"}, {"", ""}}
	for i, s := range c.servers {
		for slot := range 2 {
			got, _ := s.Get(semSlot(slot))
			if got != want[i][slot] {
				t.Errorf("node %d slot %d holds %q, want %q", i, slot, got, want[i][slot])
			}
		}
		if s.Exists(semRecord) && s.TTL(semRecord) > time.Minute {
			t.Errorf("node %d: limit record TTL %v, beyond the attempt's", i, s.TTL(semRecord))
		}
	}
}

// A Semaphore with another limit than the one the nodes hold fails at
// once, claims nothing, and names both limits. The record lasts as long
// as the permit, extended, and expires after it.
func TestSemaphoreLimitMismatch(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	two := mustSemaphore(t, client, 2)
	three := mustSemaphore(t, client, 3)
	ctx := context.Background()
	permit, err := two.TryAcquire(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mismatch := func(when string) {
		t.Helper()
		_, err := three.Acquire(ctx, time.Second)
		want := `redlock: semaphore limit mismatch: "sem" holds limit 2 on the nodes, this Semaphore has 3`
		if !errors.Is(err, redlock.ErrLimitMismatch) || err == nil || err.Error() != want {
			t.Fatalf("%s: Acquire = %v, want %q", when, err, want)
		}
	}
	mismatch("while a permit is held")
	c.settle(t)
	for i, s := range c.servers {
		for slot := range 3 {
			if semSlot(slot) != permit.Key() && s.Exists(semSlot(slot)) {
				t.Errorf("node %d: the refused attempt claimed slot %d", i, slot)
			}
		}
	}

	// Extended past its first TTL, the permit keeps the record alive.
	if err := permit.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	c.settle(t)
	for _, s := range c.servers {
		s.FastForward(30 * time.Second)
	}
	mismatch("after the first TTL, the permit extended")
	for i, s := range c.servers {
		if !s.Exists(semRecord) || s.TTL(semRecord) < s.TTL(permit.Key()) {
			t.Errorf("node %d: record TTL %v below the permit's %v", i, s.TTL(semRecord), s.TTL(permit.Key()))
		}
	}

	// Once the permit has expired, so has the record: the name is free
	// for another limit.
	for _, s := range c.servers {
		s.FastForward(31 * time.Second)
	}
	l, err := three.TryAcquire(ctx, time.Second)
	if err != nil {
		t.Fatalf("after the permit expired: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// Inspect lists the live permits with their holders' values and
// validity, and the limit each node records.
func TestSemaphoreInspect(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	sem := mustSemaphore(t, client, 3)
	ctx := context.Background()
	a, b := mustAcquire(t, sem), mustAcquire(t, sem)
	c.settle(t)
	in, err := sem.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.Held != 2 || len(in.Slots) != 3 || !slices.Equal(in.Limits, []int{3, 3, 3}) {
		t.Fatalf("Inspect = %d held of %d slots, limits %v; want 2 of 3, limits 3", in.Held, len(in.Slots), in.Limits)
	}
	for _, p := range []*redlock.Lock{a, b} {
		i := slices.IndexFunc(in.Slots, func(s redlock.Inspection) bool { return s.Key == p.Key() })
		if i < 0 {
			t.Fatalf("no slot %q in %v", p.Key(), in.Slots)
		}
		slot := in.Slots[i]
		if !slot.Held || slot.Value != p.Value() || slot.HeldUntil.Before(p.ValidUntil()) {
			t.Errorf("slot %q: held %v until %v, want held by the permit at least until %v", slot.Key, slot.Held, slot.HeldUntil, p.ValidUntil())
		}
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err = sem.Inspect(ctx); err != nil || in.Held != 1 {
		t.Errorf("after an Unlock: %d held (%v), want 1", in.Held, err)
	}
}

// A released permit wakes an Acquire of another Client waiting for one, at
// once: its retry delay is an hour.
func TestSemaphoreReleaseWakesAWaiter(t *testing.T) {
	_, conns := notifyingNodes(t, 3)
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, holder)
	waiter, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 3)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, waiter)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	held := mustAcquire(t, mustSemaphore(t, holder, 1))
	settle(t, holder)
	waiting := mustSemaphore(t, waiter, 1)
	done := make(chan lockResult, 1)
	go func() {
		l, err := waiting.Acquire(ctx, time.Minute)
		done <- lockResult{l, err}
	}()
	eventually(t, "the waiter waits for slot 0", func() bool { return redlock.Waiting(waiter, semSlot(0)) == 1 })
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiting Acquire: %v", r.err)
	}
	if r.lock.Key() != semSlot(0) {
		t.Errorf("permit on %q, want slot 0", r.lock.Key())
	}
	if err := r.lock.Unlock(ctx); err != nil {
		t.Error(err)
	}
	settle(t, waiter)
}

// Many goroutines on several Clients, contending for 2 permits, never hold
// more than 2 at once, each on its own slot, granted by a quorum of the
// nodes. The nodes never expire keys on their own here, so a permit is
// valid from Acquire until Unlock.
func TestSemaphoreConcurrentHoldersNeverExceedLimit(t *testing.T) {
	const limit, workers, rounds = 2, 8, 5
	c := newCluster(t, 3)
	var clients []*redlock.Client
	var attempts atomic.Int64
	for range 3 {
		clients = append(clients, c.client(t, redlock.WithNodeTimeout(testNodeTimeout), countingValues(&attempts),
			redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 2*time.Millisecond, 10000))))
	}
	var (
		mu       sync.Mutex
		held     = make(map[string]string) // slot key -> value
		inflight int                       // permits held
		most     int
		grants   atomic.Int64
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		sem, err := clients[w%len(clients)].Semaphore("sem", limit)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range rounds {
				p, err := sem.Acquire(ctx, time.Minute)
				if err != nil {
					fail("worker %d: Acquire: %v", w, err)
					return
				}
				grants.Add(1)
				mu.Lock()
				if _, taken := held[p.Key()]; taken {
					failures = append(failures, fmt.Sprintf("slot %s granted twice", p.Key()))
				}
				held[p.Key()] = p.Value()
				inflight++
				most = max(most, inflight)
				quorum := 0
				for _, s := range c.servers {
					if v, err := s.Get(p.Key()); err == nil && v == p.Value() {
						quorum++
					}
				}
				if quorum < 2 {
					failures = append(failures, fmt.Sprintf("permit on %s held by %d nodes", p.Key(), quorum))
				}
				// Before Unlock: the slot is free as soon as a node releases it.
				delete(held, p.Key())
				inflight--
				mu.Unlock()
				// A loaded host can time a node out: an unconfirmed
				// Unlock tries the release again.
				err = p.Unlock(context.Background())
				for try := 0; err != nil && !errors.Is(err, redlock.ErrReleased) && try < 3; try++ {
					err = p.Unlock(context.Background())
				}
				if err != nil && !errors.Is(err, redlock.ErrReleased) {
					fail("worker %d: Unlock: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if most > limit {
		t.Errorf("%d permits held at once, limit %d", most, limit)
	}
	if grants.Load() != workers*rounds {
		t.Errorf("%d grants, want %d", grants.Load(), workers*rounds)
	}
	t.Logf("%d attempts for %d grants", attempts.Load(), grants.Load())
	if n := c.keyCount(); n > 3 { // the limit record on each node
		t.Errorf("%d keys left, want only the limit records", n)
	}
}

// Do holds a permit while fn runs, and LockFromContext returns it.
func TestSemaphoreDo(t *testing.T) {
	c := newCluster(t, 3)
	sem := mustSemaphore(t, c.client(t, redlock.WithNodeTimeout(testNodeTimeout)), 2)
	var key string
	err := sem.Do(context.Background(), time.Minute, func(ctx context.Context) error {
		l, ok := redlock.LockFromContext(ctx)
		if !ok {
			return errors.New("no lock in the context")
		}
		key = l.Key()
		return nil
	})
	if err != nil || !strings.HasPrefix(key, "{sem}:permit:") {
		t.Errorf("Do = %v with permit %q, want nil with a slot", err, key)
	}
	c.settle(t)
	for i, s := range c.servers {
		for slot := range 2 {
			if s.Exists(semSlot(slot)) {
				t.Errorf("node %d: slot %d left after Do", i, slot)
			}
		}
	}
}

func TestSemaphoreBadInput(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		limit int
		want  string
	}{
		{"", 1, "redlock: invalid argument: empty semaphore name"},
		{"sem", 0, "redlock: invalid argument: semaphore limit 0 is below 1"},
		{"sem", -3, "redlock: invalid argument: semaphore limit -3 is below 1"},
		{"sem", redlock.MaxSemaphoreLimit + 1, "redlock: invalid argument: semaphore limit 1025 is above the maximum of 1024"},
		{"a}b", 2, `redlock: invalid argument: semaphore name "a}b" has no hash tag and contains '}', so its keys cannot share a hash slot; give it a hash tag`},
	} {
		_, err := client.Semaphore(tt.name, tt.limit)
		checkInvalid(t, err, tt.want)
	}
	custom := c.client(t, redlock.WithScripts(redlock.Scripts{Release: func(src string) string { return src + "\n" }}))
	_, err := custom.Semaphore("sem", 2)
	checkInvalid(t, err, "redlock: invalid argument: semaphores run scripts of their own and do not support WithScripts")
	var nilClient *redlock.Client
	_, err = nilClient.Semaphore("sem", 2)
	checkInvalid(t, err, "redlock: invalid argument: nil *Client")

	var nilSem *redlock.Semaphore
	var zero redlock.Semaphore
	var nilCtx context.Context
	sem := mustSemaphore(t, client, 2)
	for _, call := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := nilSem.Acquire(ctx, time.Second); return err }(), "redlock: invalid argument: Acquire of a nil *Semaphore"},
		{func() error { _, err := zero.TryAcquire(ctx, time.Second); return err }(), "redlock: invalid argument: Acquire of a Semaphore that no Client returned"},
		{func() error { _, err := zero.Inspect(ctx); return err }(), "redlock: invalid argument: Inspect of a Semaphore that no Client returned"},
		{nilSem.Do(ctx, time.Second, func(context.Context) error { return nil }), "redlock: invalid argument: Do of a nil *Semaphore"},
		{sem.Do(ctx, time.Second, nil), "redlock: invalid argument: nil function"},
		{func() error { _, err := sem.Acquire(ctx, 0); return err }(), "redlock: invalid argument: ttl 0s is below the 1ms resolution of key expiry"},
		{func() error { _, err := sem.Acquire(nilCtx, time.Second); return err }(), "redlock: invalid argument: nil Context"},
	} {
		checkInvalid(t, call.err, call.want)
	}
	if nilSem.Name() != "" || nilSem.Limit() != 0 {
		t.Error("a nil *Semaphore has a name or limit")
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("refused calls left %d keys", n)
	}
}

// With WithFencing, each permit's token is greater than those of the
// earlier permits on its slot, also when a request is applied twice or
// its reply is lost, and the slot's counter on a quorum records it.
func TestSemaphoreFencingTokensGrowPerSlot(t *testing.T) {
	c := newCluster(t, 3)
	client := scheduleClient(t, c, redlock.WithFencing())
	sem := mustSemaphore(t, client, 2)
	ctx := context.Background()
	last := map[string]uint64{}
	modes := [][]faults.Mode{
		{faults.Pass, faults.Pass, faults.Pass},
		{faults.Duplicate, faults.Pass, faults.Pass},
		{faults.Pass, faults.LoseReply, faults.Pass},
		{faults.Duplicate, faults.Duplicate, faults.LoseReply},
	}
	for round := range 8 {
		c.setFaults(modes[round%len(modes)]...)
		a, err := sem.TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		b, err := sem.TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		c.setFaults(faults.Pass, faults.Pass, faults.Pass)
		c.settle(t)
		for _, p := range []*redlock.Lock{a, b} {
			if p.Token() <= last[p.Key()] {
				t.Errorf("round %d: token %d on %s, not above the slot's last %d", round, p.Token(), p.Key(), last[p.Key()])
			}
			last[p.Key()] = p.Token()
			recorded := 0
			for _, s := range c.servers {
				if got, _ := s.Get(p.Key() + ":fencing-token"); got == fmt.Sprint(p.Token()) {
					recorded++
				}
			}
			if recorded < 2 {
				t.Errorf("round %d: token %d on %d nodes' counters, want a quorum", round, p.Token(), recorded)
			}
			if err := p.Unlock(ctx); err != nil {
				t.Errorf("Unlock: %v", err)
			}
		}
	}
	if len(last) != 2 {
		t.Errorf("permits on %v, want both slots", last)
	}
}

// A counter that holds something else than a token fails the fenced
// permit with an error that names it, and claims no slot.
func TestSemaphoreFencingBadCounter(t *testing.T) {
	c := newCluster(t, 3)
	for _, s := range c.servers {
		s.Set(semSlot(0)+":fencing-token", "not-a-token")
	}
	sem := mustSemaphore(t, scheduleClient(t, c, redlock.WithFencing()), 1)
	_, err := sem.TryAcquire(context.Background(), time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "fencing counter") {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired naming the fencing counter", err)
	}
	c.settle(t)
	for i, s := range c.servers {
		if s.Exists(semSlot(0)) {
			t.Errorf("node %d: the slot was claimed although its counter is bad", i)
		}
	}
}

// The key prefix applies to the slots and the record; a permit's Key is
// its slot's name without it, and Extend and Resume of the permit's value
// work on the prefixed slot: Resume in the same Client returns the permit.
func TestSemaphoreKeyPrefix(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithKeyPrefix("app:"))
	sem := mustSemaphore(t, client, 1)
	ctx := context.Background()
	p := mustAcquire(t, sem)
	if p.Key() != semSlot(0) {
		t.Errorf("Key = %q, want %q", p.Key(), semSlot(0))
	}
	if err := p.Extend(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := client.Resume(ctx, p.Key(), p.Value(), 2*time.Minute); err != nil || got != p {
		t.Errorf("Resume = %p, %v; want the permit %p", got, err, p)
	}
	c.settle(t)
	for i, s := range c.servers {
		want := []string{"app:" + semRecord, "app:" + semSlot(0)}
		if got := s.Keys(); !slices.Equal(got, want) {
			t.Errorf("node %d keys = %q, want %q", i, got, want)
		}
		if s.TTL("app:"+semRecord) < s.TTL("app:"+semSlot(0)) {
			t.Errorf("node %d: record TTL %v below the slot's %v", i, s.TTL("app:"+semRecord), s.TTL("app:"+semSlot(0)))
		}
	}
}

// hungSubscriber is a node whose Subscribe calls hang until their context
// ends, or until want of them are under way at once.
type hungSubscriber struct {
	*resp.Notifier
	want int
	mu   sync.Mutex
	now  int // Subscribe calls under way
	most int // the most under way at once
	all  chan struct{}
}

func (h *hungSubscriber) Subscribe(ctx context.Context, _ string, _ func(string)) (func(), error) {
	h.mu.Lock()
	h.now++
	h.most = max(h.most, h.now)
	if h.now == h.want && h.most == h.want {
		close(h.all)
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.now--
		h.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.all:
		return nil, errors.New("hung")
	}
}

// A waiting Acquire subscribes to the release of every slot at once: a
// node that never answers costs its first wait one node timeout, not one
// per slot.
func TestSemaphoreWaiterSubscribesToEverySlotAtOnce(t *testing.T) {
	const limit = 4
	_, conns := notifyingNodes(t, 3)
	hung := &hungSubscriber{Notifier: conns[2].(*resp.Notifier), want: limit, all: make(chan struct{})}
	conns[2] = hung
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, holder)
	waiter, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, waiter)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	full := mustSemaphore(t, holder, limit)
	var held []*redlock.Lock
	for range limit {
		held = append(held, mustAcquire(t, full))
	}
	if _, err := mustSemaphore(t, waiter, limit).Acquire(ctx, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Acquire with every slot held = %v, want ErrNotAcquired", err)
	}
	hung.mu.Lock()
	most := hung.most
	hung.mu.Unlock()
	if most != limit {
		t.Errorf("the hung node had at most %d subscriptions under way at once, want %d", most, limit)
	}
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
}

// A limit record that holds no limit, a key of the same name written by
// something else, fails Acquire with an error that does not repeat it.
func TestSemaphoreForeignLimitRecord(t *testing.T) {
	c := newCluster(t, 3)
	foreign := strings.Repeat("x", 1000)
	for _, s := range c.servers {
		s.Set(semRecord, foreign)
	}
	sem := mustSemaphore(t, scheduleClient(t, c), 2)
	_, err := sem.TryAcquire(context.Background(), time.Minute)
	want := `redlock: semaphore limit mismatch: "sem" has a limit record that holds no limit`
	if !errors.Is(err, redlock.ErrLimitMismatch) || err.Error() != want {
		t.Errorf("TryAcquire = %v, want %q", err, want)
	}
}

// A permit taken over by another Client keeps the limit record as long as
// its slot when Semaphore.Resume takes it over, so that a Semaphore of a
// larger limit is refused while it lives; Client.Resume, which makes a
// plain lock of it, lets the record expire first.
func TestSemaphoreResumeKeepsTheLimitRecord(t *testing.T) {
	for _, viaSemaphore := range []bool{true, false} {
		t.Run(fmt.Sprintf("semaphore=%v", viaSemaphore), func(t *testing.T) {
			c := newCluster(t, 3)
			ctx := context.Background()
			first := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			permit, err := mustSemaphore(t, first, 1).TryAcquire(ctx, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			taker := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			var resumed *redlock.Lock
			if viaSemaphore {
				resumed, err = mustSemaphore(t, taker, 1).Resume(ctx, permit.Key(), permit.Value(), time.Minute)
			} else {
				resumed, err = taker.Resume(ctx, permit.Key(), permit.Value(), time.Minute)
			}
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			c.settle(t)
			for _, s := range c.servers {
				s.FastForward(2 * time.Second) // past the first TTL, not the resumed one
			}
			other := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
			l, err := mustSemaphore(t, other, 2).TryAcquire(ctx, time.Second)
			switch {
			case viaSemaphore && !errors.Is(err, redlock.ErrLimitMismatch):
				t.Errorf("limit 2 beside a resumed permit of limit 1: TryAcquire = %v, %v; want ErrLimitMismatch", l, err)
			case !viaSemaphore && err != nil:
				t.Errorf("Client.Resume, the record expired: TryAcquire = %v; want the permit a limit 2 gets then", err)
			}
			if l != nil {
				l.Unlock(ctx)
			}
			if err := resumed.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// Semaphore.Resume refuses a key that is none of its slots.
func TestSemaphoreResumeOfAnotherKey(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	sem := mustSemaphore(t, client, 2)
	for _, key := range []string{"sem", semSlot(2), "{sem}:limit", "other"} {
		if l, err := sem.Resume(context.Background(), key, "v", time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("Resume(%q) = %v, %v; want ErrInvalidArgument", key, l, err)
		}
	}
	var zero *redlock.Semaphore
	if _, err := zero.Resume(context.Background(), semSlot(0), "v", time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Resume of a nil *Semaphore = %v, want ErrInvalidArgument", err)
	}
}
