package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// semaphoreLimits are the limits of BenchmarkSemaphoreUncontended.
var semaphoreLimits = []int{1, 4, 16}

// BenchmarkSemaphoreUncontended times one Acquire plus Unlock of a permit
// (lib=locksmith-semaphore) next to one Lock plus Unlock
// (lib=locksmith-lock), from one goroutine, over go-redis, on 1, 3 and 5
// nodes and for limits 1, 4 and 16; the lock rows repeat at every limit so
// that each ratio compares neighbours in one pass. Every call is on a name
// no other goroutine uses, and the goroutine cycles through 16 of them.
func BenchmarkSemaphoreUncontended(b *testing.B) {
	for _, n := range nodeCounts {
		for _, limit := range semaphoreLimits {
			for _, lib := range []string{"locksmith-lock", "locksmith-semaphore"} {
				name := fmt.Sprintf("nodes=%d/limit=%d/lib=%s", n, limit, lib)
				b.Run(name, func(b *testing.B) {
					client := newLocksmithGoredis(b, addrs[:n]).(locksmithContender).client
					prefix := "bench:semaphore:" + name
					if lib == "locksmith-lock" {
						lockUnlockSerial(b, locksmithContender{client, ttl}, prefix)
						return
					}
					acquireUnlockSerial(b, client, prefix, limit)
				})
			}
		}
	}
}

// acquireUnlockSerial times Acquire plus Unlock on keysPerGoroutine
// semaphores of limit, after a warm-up on others.
func acquireUnlockSerial(b *testing.B, client *redlock.Client, prefix string, limit int) {
	ctx := context.Background()
	semaphores := func(prefix string) []*redlock.Semaphore {
		var out []*redlock.Semaphore
		for _, name := range keyTable(prefix, 1)[0] {
			sem, err := client.Semaphore(name, limit)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, sem)
		}
		return out
	}
	hold := func(sem *redlock.Semaphore) {
		permit, err := sem.Acquire(ctx, ttl)
		if err != nil {
			b.Fatal(err)
		}
		if err := permit.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, sem := range semaphores(prefix + ":warm-up")[:4] {
		hold(sem)
	}
	sems := semaphores(prefix)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		hold(sems[i%keysPerGoroutine])
		i++
	}
}

// The shape of BenchmarkSemaphoreContended.
const (
	contendedLimit   = 4
	contendedWorkers = 16
	contendedClients = 4 // the workers are spread over this many Clients
)

// contendedNodes are the cluster sizes of BenchmarkSemaphoreContended.
var contendedNodes = []int{3, 5}

// contendedHolds are how long a worker of BenchmarkSemaphoreContended
// keeps a permit.
var contendedHolds = []time.Duration{time.Millisecond, 10 * time.Millisecond}

// contendedThinks are the pauses of BenchmarkSemaphoreContended between a
// worker's release and its next request, in holds: none (every worker
// wants a permit all the time), and twice the hold, spent on work that
// needs no permit, so that a worker that has just released does not find
// its own slot still free. With 16 workers each wanting a permit a third
// of the time, 5.3 permits are wanted on average, more than the 4 there
// are.
var contendedThinks = []int{0, 2}

// A permitSource hands out the permits of one semaphore, as one Client
// (one process) of a fleet does.
type permitSource interface {
	// acquire waits for a permit and returns its release. An error
	// matching errNotAcquired means the source gave up waiting, as its
	// retry settings allow; the worker asks again.
	acquire(ctx context.Context) (release func(context.Context) error, err error)
}

// roundCounts counts the acquire rounds that the sources of one
// sub-benchmark sent: a round is one request to every node.
type roundCounts struct {
	rounds atomic.Int64
	// Where the source can tell (classified, locksmith's), the failed
	// rounds are also counted by what the nodes answered: partial, some
	// node claimed a slot for the attempt but no slot reached a quorum
	// (another attempt won the slot, or the nodes split it so that none
	// did, or its release had reached only some of them); full, every
	// node that answered found all slots held.
	partial, full atomic.Int64
	classified    bool
}

// A permitSpec makes a permitSource of one kind.
type permitSpec struct {
	name string
	// new returns a source with clients of its own over the servers at
	// addrs, for the semaphore of limit on name, that counts its rounds
	// in counts.
	new func(tb testing.TB, addrs []string, name string, limit int, counts *roundCounts) permitSource
}

// permitSpecs are the contenders of BenchmarkSemaphoreContended:
//
//   - locksmith-semaphore: redlock.Semaphore with the Client's default
//     options (release notifications on, the default retry strategy);
//   - redsync-mutexes: limit redsync mutexes, name:0 to name:limit-1,
//     which a worker tries in that order with TryLockContext, once each,
//     before it sleeps redsync's default retry delay (50 to 250 ms, drawn
//     at random as redsync draws it) and tries them all again;
//   - redsync-mutexes-1ms: the same with a sleep of 1 ms.
var permitSpecs = []permitSpec{
	{name: "locksmith-semaphore", new: newSemaphoreSource},
	{name: "redsync-mutexes", new: redsyncMutexesSleeping(func() time.Duration {
		return 50*time.Millisecond + time.Duration(rand.IntN(200))*time.Millisecond
	})},
	{name: "redsync-mutexes-1ms", new: redsyncMutexesSleeping(func() time.Duration { return time.Millisecond })},
}

// BenchmarkSemaphoreContended has 16 workers, spread over 4 Clients (4
// processes, each with clients of its own), compete for the 4 permits of
// one semaphore on 3 and on 5 nodes. Each worker asks for a permit, holds
// it for 1 ms, releases it and, after its think time (0 or 2 ms), asks
// again. One op is one acquisition. Besides ns/op it reports:
//
//   - grants/s: acquisitions per second;
//   - busy-%: of the time during which at least one worker waits, the
//     share during which all 4 permits are held, from the workers' own
//     timestamps: a worker waits from its request to the return of its
//     Acquire, and holds from then until it calls Unlock;
//   - wait-p50-ms, wait-p99-ms, max-wait-ms: how long requests waited;
//   - rounds/grant: acquire rounds sent per acquisition (for locksmith the
//     Acquire attempts its observer saw, for redsync each TryLockContext);
//   - partial/grant, full/grant (locksmith): failed rounds per
//     acquisition in which some node claimed a slot but none reached a
//     quorum (races lost, and splits), and in which every node found all
//     slots held (see roundCounts);
//   - give-ups: Acquire calls that ran out of retries (the worker asks
//     again at once, and its wait goes on).
func BenchmarkSemaphoreContended(b *testing.B) {
	for _, n := range contendedNodes {
		for _, hold := range contendedHolds {
			for _, thinks := range contendedThinks {
				think := time.Duration(thinks) * hold
				for _, spec := range permitSpecs {
					name := fmt.Sprintf("nodes=%d/limit=%d/hold=%v/think=%v/lib=%s", n, contendedLimit, hold, think, spec.name)
					b.Run(name, func(b *testing.B) {
						var counts roundCounts
						sources := make([]permitSource, contendedClients)
						for i := range sources {
							sources[i] = spec.new(b, addrs[:n], "bench:semaphore:"+name, contendedLimit, &counts)
						}
						contend(b, sources, &counts, hold, think)
					})
				}
			}
		}
	}
}

// A span is one acquisition, from a worker's timestamps.
type span struct {
	asked    time.Time // the worker asked for a permit
	acquired time.Time // it had one
	released time.Time // it called the release
}

func contend(b *testing.B, sources []permitSource, counts *roundCounts, hold, think time.Duration) {
	ctx := context.Background()
	var gaveUp atomic.Int64
	// run has the workers make acquisitions acquisitions in all and
	// returns their spans.
	run := func(acquisitions int) []span {
		var (
			remaining atomic.Int64
			failed    atomic.Bool
			mu        sync.Mutex
			all       []span
			wg        sync.WaitGroup
		)
		remaining.Store(int64(acquisitions))
		for w := range contendedWorkers {
			source := sources[w%len(sources)]
			wg.Go(func() {
				var spans []span
				defer func() {
					mu.Lock()
					all = append(all, spans...)
					mu.Unlock()
				}()
				for !failed.Load() && remaining.Add(-1) >= 0 {
					s := span{asked: time.Now()}
					release, err := source.acquire(ctx)
					for errors.Is(err, errNotAcquired) {
						gaveUp.Add(1)
						release, err = source.acquire(ctx)
					}
					if err != nil {
						b.Error(err)
						failed.Store(true)
						return
					}
					s.acquired = time.Now()
					time.Sleep(hold)
					s.released = time.Now()
					if err := release(ctx); err != nil {
						b.Error(err)
						failed.Store(true)
						return
					}
					spans = append(spans, s)
					if think > 0 {
						time.Sleep(think)
					}
				}
			})
		}
		wg.Wait()
		return all
	}

	run(4 * contendedWorkers) // connections, scripts, subscriptions
	counts.rounds.Store(0)
	counts.partial.Store(0)
	counts.full.Store(0)
	gaveUp.Store(0)
	b.ResetTimer()
	spans := run(b.N)
	b.StopTimer()

	o := occupancyOf(spans, contendedLimit)
	if o.maxHolders > contendedLimit {
		b.Errorf("%d workers held a permit at once, limit %d", o.maxHolders, contendedLimit)
	}
	if elapsed := b.Elapsed(); elapsed > 0 {
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "grants/s")
	}
	if o.waiting > 0 {
		b.ReportMetric(100*float64(o.full)/float64(o.waiting), "busy-%")
	}
	b.ReportMetric(ms(percentile(o.waits, 0.50)), "wait-p50-ms")
	b.ReportMetric(ms(percentile(o.waits, 0.99)), "wait-p99-ms")
	b.ReportMetric(ms(percentile(o.waits, 1)), "max-wait-ms")
	b.ReportMetric(float64(counts.rounds.Load())/float64(b.N), "rounds/grant")
	if counts.classified {
		b.ReportMetric(float64(counts.partial.Load())/float64(b.N), "partial/grant")
		b.ReportMetric(float64(counts.full.Load())/float64(b.N), "full/grant")
	}
	b.ReportMetric(float64(gaveUp.Load()), "give-ups")
}

// occupancy is what the spans of a run show.
type occupancy struct {
	waiting    time.Duration   // time during which at least one worker waited
	full       time.Duration   // of that, the time during which limit workers held a permit
	maxHolders int             // the most workers that held a permit at once
	waits      []time.Duration // every span's wait, sorted
}

// occupancyOf sweeps the spans in time order, counting at each instant the
// workers that wait (from asked to acquired) and those that hold (from
// acquired to released).
func occupancyOf(spans []span, limit int) occupancy {
	type event struct {
		at               time.Time
		waiters, holders int // changes
	}
	events := make([]event, 0, 3*len(spans))
	var o occupancy
	for _, s := range spans {
		events = append(events,
			event{s.asked, 1, 0},
			event{s.acquired, -1, 1},
			event{s.released, 0, -1})
		o.waits = append(o.waits, s.acquired.Sub(s.asked))
	}
	slices.Sort(o.waits)
	// At one instant, releases come before acquisitions: the order in
	// which they happened, as a permit is released before another
	// holder has it.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.holders - b.holders
	})
	waiters, holders := 0, 0
	for i, e := range events {
		if i > 0 && waiters > 0 {
			dt := e.at.Sub(events[i-1].at)
			o.waiting += dt
			if holders >= limit {
				o.full += dt
			}
		}
		waiters += e.waiters
		holders += e.holders
		o.maxHolders = max(o.maxHolders, holders)
	}
	return o
}

// locksmith

type semaphoreSource struct {
	sem *redlock.Semaphore
}

// newSemaphoreSource returns a Client over go-redis with default options
// and an observer that counts its acquire rounds, and the Semaphore on
// name.
func newSemaphoreSource(tb testing.TB, addrs []string, name string, limit int, counts *roundCounts) permitSource {
	tb.Helper()
	observer := observe.Observer{
		AttemptDone: func(_ context.Context, info observe.RoundInfo) {
			counts.rounds.Add(1)
			switch {
			case info.OK:
			case info.Granted > 0:
				counts.partial.Add(1)
			default:
				counts.full.Add(1)
			}
		},
	}
	counts.classified = true
	client, err := redlock.New(goredisConns(goredisClients(tb, addrs)), redlock.WithObserver(observer))
	if err != nil {
		tb.Fatal(err)
	}
	settleAtEnd(tb, client)
	sem, err := client.Semaphore(name, limit)
	if err != nil {
		tb.Fatal(err)
	}
	return semaphoreSource{sem}
}

func (s semaphoreSource) acquire(ctx context.Context) (func(context.Context) error, error) {
	permit, err := s.sem.Acquire(ctx, ttl)
	if err != nil {
		var qe *redlock.QuorumError
		if errors.As(err, &qe) && len(qe.Errors) == 0 && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %w", errNotAcquired, err)
		}
		return nil, err
	}
	return permit.Unlock, nil
}

// redsync: mutexes tried in turn

type redsyncMutexes struct {
	rs     *redsync.Redsync
	names  []string // the mutexes, in the order tried
	opts   []redsync.Option
	delay  func() time.Duration // the sleep after a pass that found all taken
	counts *roundCounts
}

// redsyncMutexesSleeping returns a permitSpec's new for redsync mutexes
// tried in turn, sleeping delay() after each pass that found them all
// taken.
func redsyncMutexesSleeping(delay func() time.Duration) func(testing.TB, []string, string, int, *roundCounts) permitSource {
	return func(tb testing.TB, addrs []string, name string, limit int, counts *roundCounts) permitSource {
		tb.Helper()
		var pools []redsyncredis.Pool
		for _, client := range goredisClients(tb, addrs) {
			pools = append(pools, redsyncgoredis.NewPool(client))
		}
		names := make([]string, limit)
		for i := range names {
			names[i] = name + ":" + strconv.Itoa(i)
		}
		return redsyncMutexes{
			rs: redsync.New(pools...), names: names, opts: []redsync.Option{redsync.WithExpiry(ttl)},
			delay: delay, counts: counts,
		}
	}
}

func (s redsyncMutexes) acquire(ctx context.Context) (func(context.Context) error, error) {
	for {
		for _, name := range s.names {
			s.counts.rounds.Add(1)
			mutex := s.rs.NewMutex(name, s.opts...)
			err := mutex.TryLockContext(ctx)
			var taken *redsync.ErrTaken
			switch {
			case err == nil:
				return func(ctx context.Context) error {
					ok, err := mutex.UnlockContext(ctx)
					if err == nil && !ok {
						err = errors.New("redsync: unlock not confirmed by a quorum")
					}
					return err
				}, nil
			case errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken):
				continue
			}
			return nil, err
		}
		timer := time.NewTimer(s.delay())
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// TestOccupancy checks the sweep of occupancyOf on a schedule worked out
// by hand, with limit 2: a release and an acquisition at one instant (6)
// count the release first, and waiting time overlapped by several workers
// counts once.
func TestOccupancy(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	spans := []span{
		{at(0), at(0), at(10)},
		{at(0), at(1), at(6)},
		{at(2), at(6), at(9)},
		{at(3), at(10), at(12)},
	}
	o := occupancyOf(spans, 2)
	// Someone waits during [0,1] and [2,10]; 2 permits are held during
	// [1,9], of which [2,9] has a waiter.
	if o.waiting != 9*time.Millisecond || o.full != 7*time.Millisecond {
		t.Errorf("waiting %v, full %v; want 9ms, 7ms", o.waiting, o.full)
	}
	if o.maxHolders != 2 {
		t.Errorf("max holders %d, want 2", o.maxHolders)
	}
	want := []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 7 * time.Millisecond}
	if !slices.Equal(o.waits, want) {
		t.Errorf("waits %v, want %v", o.waits, want)
	}
}
