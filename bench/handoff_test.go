package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/locksmith-go/locksmith/driver"
	goredisdriver "github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

// handoffGoroutines is how many goroutines compete for the one key of
// BenchmarkHandoff.
const handoffGoroutines = 8

// handoffHold is how long each owner keeps the lock in BenchmarkHandoff:
// long enough that the previous owner's next attempt, made as soon as the
// lock has changed hands, finds it taken, so every waiter is in its retry
// loop when the lock is released.
const handoffHold = time.Millisecond

// handoffContenders are the contenders of BenchmarkHandoff, each waiting
// with its library's default retry settings:
//
//   - locksmith, locksmith-redigo, locksmith-rueidis: release
//     notifications on (WithReleaseNotifications(true));
//   - locksmith-polling: the goredis adapter with release notifications
//     off, polling at the default delays (50 to 250 ms);
//   - redsync: its defaults (32 tries, 50 to 250 ms apart);
//   - redislock: it retries not at all by default, so it waits with the
//     linear backoff of 100 ms that its documentation shows (N = 1 only).
var handoffContenders = []contenderSpec{
	{name: "locksmith", new: newLocksmithGoredis},
	{name: "locksmith-polling", new: newLocksmithPolling},
	{name: "locksmith-redigo", new: newLocksmithRedigo},
	{name: "locksmith-rueidis", new: newLocksmithRueidis},
	{name: "redsync", new: newRedsync},
	{name: "redislock", singleNode: true, new: newRedislockWaiting},
}

// BenchmarkHandoff measures how long the lock on one key takes to pass
// from one goroutine to another: 8 goroutines take turns at it, each
// holding it for 1 ms, and no goroutine tries again before another one has
// had the lock. One op is one acquisition. Besides ns/op it reports:
//
//   - p50-ms, p99-ms, max-ms: the hand-off latency, from the return of one
//     owner's Unlock to the return of the next owner's Lock. The next Lock
//     can return first, since a majority of released nodes suffices; such a
//     hand-off counts as 0.
//   - handoffs/s: acquisitions per second.
//   - max-wait-ms: the longest any one Lock call waited, over all
//     goroutines, which shows whether a waiter starves.
func BenchmarkHandoff(b *testing.B) {
	for _, n := range nodeCounts {
		for _, spec := range handoffContenders {
			if !spec.supports(n) {
				continue
			}
			name := fmt.Sprintf("nodes=%d/lib=%s", n, spec.name)
			b.Run(name, func(b *testing.B) {
				c := spec.new(b, addrs[:n])
				prefix := "bench:" + name
				warmUp(b, c, prefix, handoffGoroutines)
				handoff(b, c, prefix+":key")
			})
		}
	}
}

// newLocksmithPolling is locksmith over go-redis with release
// notifications off.
func newLocksmithPolling(tb testing.TB, addrs []string) contender {
	tb.Helper()
	var conns []driver.Conn
	for _, client := range goredisClients(tb, addrs) {
		conns = append(conns, goredisdriver.New(client))
	}
	client, err := redlock.New(conns, redlock.WithReleaseNotifications(false))
	if err != nil {
		tb.Fatal(err)
	}
	settleAtEnd(tb, client)
	return locksmithContender{client, ttl}
}

// redislockWaiting is bsm/redislock retrying every 100 ms until it has the
// lock or ctx ends.
type redislockWaiting struct {
	client *redislock.Client
	opts   *redislock.Options
}

func newRedislockWaiting(tb testing.TB, addrs []string) contender {
	tb.Helper()
	if len(addrs) != 1 {
		tb.Fatalf("redislock locks on one node, got %d", len(addrs))
	}
	return redislockWaiting{
		client: redislock.New(goredisClients(tb, addrs)[0]),
		opts:   &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)},
	}
}

func (c redislockWaiting) hold(ctx context.Context, key string, wait bool, fn func()) error {
	if !wait {
		return redislockContender{c.client}.hold(ctx, key, false, fn)
	}
	// With a linear backoff Obtain retries until it has the lock or ctx
	// ends, so any error is a failure.
	lock, err := c.client.Obtain(ctx, key, ttl, c.opts)
	if err != nil {
		return err
	}
	fn()
	return lock.Release(ctx)
}

// handoffTimes records, per acquisition, when its Lock and its Unlock
// returned, and the longest wait of any Lock call.
type handoffTimes struct {
	mu       sync.Mutex
	locked   []time.Time // by acquisition number
	unlocked []time.Time
	maxWait  time.Duration
}

func (h *handoffTimes) record(list *[]time.Time, turn int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(*list) <= turn {
		*list = append(*list, time.Time{})
	}
	(*list)[turn] = at
}

// latencies returns the hand-off latencies, sorted: for each acquisition
// but the first, from the previous one's Unlock returning to its Lock
// returning, 0 when the Lock returned first.
func (h *handoffTimes) latencies() []time.Duration {
	var out []time.Duration
	for i := 1; i < len(h.locked) && i-1 < len(h.unlocked); i++ {
		if h.locked[i].IsZero() || h.unlocked[i-1].IsZero() {
			continue
		}
		out = append(out, max(0, h.locked[i].Sub(h.unlocked[i-1])))
	}
	slices.Sort(out)
	return out
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func handoff(b *testing.B, c contender, key string) {
	ctx := context.Background()
	var (
		mu        sync.Mutex
		changed   = sync.NewCond(&mu)
		owners    int // acquisitions so far, under mu
		remaining atomic.Int64
		failed    atomic.Bool
		times     handoffTimes
	)
	remaining.Store(int64(b.N))
	wake := func() {
		mu.Lock()
		changed.Broadcast()
		mu.Unlock()
	}

	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range handoffGoroutines {
		wg.Go(func() {
			turn := 0 // the acquisition that was this goroutine's last
			var asked time.Time
			held := func() {
				now := time.Now()
				mu.Lock()
				turn = owners
				owners++
				changed.Broadcast()
				mu.Unlock()
				times.record(&times.locked, turn, now)
				times.mu.Lock()
				times.maxWait = max(times.maxWait, now.Sub(asked))
				times.mu.Unlock()
				time.Sleep(handoffHold)
			}
			for !failed.Load() {
				left := remaining.Add(-1)
				if left <= 0 {
					wake() // the last acquisition is taken: waiters may go
				}
				if left < 0 {
					return
				}
				asked = time.Now()
				err := c.hold(ctx, key, true, held)
				if err != nil {
					if errors.Is(err, errNotAcquired) {
						err = fmt.Errorf("gave up waiting, as the default retry settings allow: %w", err)
					}
					b.Error(err)
					failed.Store(true)
					wake()
					return
				}
				times.record(&times.unlocked, turn, time.Now())
				// Let another goroutine have the lock before trying again.
				mu.Lock()
				for owners == turn+1 && remaining.Load() > 0 && !failed.Load() {
					changed.Wait()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if elapsed := b.Elapsed(); elapsed > 0 {
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
	}
	lat := times.latencies()
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
	b.ReportMetric(ms(times.maxWait), "max-wait-ms")
}
