package bench

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/internal/faultproxy"
)

// grayTTL is the lock TTL in BenchmarkGray. At it, locksmith's default
// per-node timeout (5% of the TTL) and redsync's (the TTL times its default
// timeout factor of 0.05) are both grayNodeTimeout.
const grayTTL = 2 * time.Second

// grayNodeTimeout is how long any contender lets one node take to answer
// one request in BenchmarkGray. locksmith (over every adapter) and
// redsync's lock round derive it from grayTTL with their defaults, the raw
// floor puts it on each command's context, and the go-redis clients have it
// as their dial, read and write timeouts, which bound redsync's unlock: it
// sets no deadline of its own.
const grayNodeTimeout = 100 * time.Millisecond

// grayLatency is what the slow node adds to every reply.
const grayLatency = 50 * time.Millisecond

// grayGoroutines is how many goroutines take locks at once in
// BenchmarkGray, each one lock+unlock at a time: with calls that each wait
// up to a node timeout, it gets enough calls for a p99 in a bounded time.
const grayGoroutines = 4

// grayNodes is the cluster size of BenchmarkGray; the faulty node is the
// first, the one a fan-out may serve on the calling goroutine.
const grayNodes = 5

// A grayScenario is the state of the faulty node while calls are timed.
type grayScenario struct {
	name string
	// proxied: the faulty node is reached through a faultproxy.
	proxied bool
	// fault puts the faulty node in its state once the contender has
	// warmed up, and returns what restores it.
	fault func(tb testing.TB, proxy *faultproxy.Proxy) (restore func())
}

var grayScenarios = []grayScenario{
	{name: "healthy", fault: func(testing.TB, *faultproxy.Proxy) func() { return func() {} }},
	{name: "stopped", fault: func(tb testing.TB, _ *faultproxy.Proxy) func() {
		tb.Helper()
		server := servers[0]
		if err := server.Pause(); err != nil {
			tb.Fatal(err)
		}
		return func() {
			if err := server.Resume(); err != nil {
				tb.Error(err)
			}
		}
	}},
	{name: "slow", proxied: true, fault: func(tb testing.TB, proxy *faultproxy.Proxy) func() {
		tb.Helper()
		if err := proxy.SetDelays(0, grayLatency); err != nil {
			tb.Fatal(err)
		}
		return func() { _ = proxy.SetDelays(0, 0) }
	}},
	{name: "refused", proxied: true, fault: func(_ testing.TB, proxy *faultproxy.Proxy) func() {
		proxy.Refuse()
		return func() {}
	}},
}

// grayContenders are the contenders of BenchmarkGray, each with its
// library's default options at grayTTL and the go-redis clients of
// grayGoredisClients:
//
//   - locksmith, locksmith-redigo, locksmith-rueidis: as in
//     BenchmarkLockUnlock;
//   - redsync: its defaults, a single attempt;
//   - redsync-failfast: with WithFailFast(true), which ends a round once a
//     quorum has answered alike;
//   - raw: the floor, see rawQuorumContender.
var grayContenders = []contenderSpec{
	{name: "locksmith", new: func(tb testing.TB, addrs []string) contender {
		return newLocksmith(tb, goredisConns(grayGoredisClients(tb, addrs)), grayTTL)
	}},
	{name: "locksmith-redigo", new: func(tb testing.TB, addrs []string) contender {
		return newLocksmith(tb, redigoConns(tb, addrs), grayTTL)
	}},
	{name: "locksmith-rueidis", new: func(tb testing.TB, addrs []string) contender {
		return newLocksmith(tb, rueidisConns(tb, addrs), grayTTL)
	}},
	{name: "redsync", new: func(tb testing.TB, addrs []string) contender {
		return newRedsyncOver(grayGoredisClients(tb, addrs), redsync.WithExpiry(grayTTL))
	}},
	{name: "redsync-failfast", new: func(tb testing.TB, addrs []string) contender {
		return newRedsyncOver(grayGoredisClients(tb, addrs), redsync.WithExpiry(grayTTL), redsync.WithFailFast(true))
	}},
	{name: "raw", new: newRawQuorum},
}

// grayGoredisClients returns go-redis clients made with goredisOptions,
// grayNodeTimeout as their dial, read and write timeouts and no command
// retries (a retry is a new request past the node timeout), closed when tb
// ends. go-redis's dial retries (5 attempts, 100 ms apart) are left on:
// they end with a command's deadline, where the library sets one.
func grayGoredisClients(tb testing.TB, addrs []string) []*redis.Client {
	tb.Helper()
	clients := make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		opts := goredisOptions(addr)
		opts.DialTimeout = grayNodeTimeout
		opts.ReadTimeout = grayNodeTimeout
		opts.WriteTimeout = grayNodeTimeout
		opts.MaxRetries = -1
		client := redis.NewClient(opts)
		tb.Cleanup(func() { client.Close() })
		clients[i] = client
	}
	return clients
}

// grayRuns numbers the runs of BenchmarkGray's sub-benchmarks and of
// TestGrayContendersExclude's, so that no two runs use the same keys.
var grayRuns atomic.Int64

// BenchmarkGray times lock+unlock on 5 nodes while one of them, the first,
// is healthy, stopped with SIGSTOP, 50 ms slower to reply, or refusing
// connections (scenario=healthy, stopped, slow, refused). Each contender
// warms up on healthy nodes, then the fault starts, and grayGoroutines
// goroutines take single-attempt locks on keys used once each, until b.N
// calls have been made; the fault ends before the next sub-benchmark. It
// reports, per call: ns/op, the mean; p50-ms, p99-ms and max-ms; and
// failed/op, the share of calls that returned an error, whose times are
// counted too. Calls wait on node timeouts, so run it with a bounded count
// (-benchtime=200x: see run.sh).
func BenchmarkGray(b *testing.B) {
	if len(addrs) < grayNodes {
		b.Fatalf("BenchmarkGray needs %d servers, have %d", grayNodes, len(addrs))
	}
	// go-redis logs every failed dial to the refusing node; the failures
	// show in failed/op where they matter.
	redis.SetLogger(silentLog{})
	for _, scenario := range grayScenarios {
		for _, spec := range grayContenders {
			name := "scenario=" + scenario.name + "/lib=" + spec.name
			b.Run(name, func(b *testing.B) {
				nodes := slices.Clone(addrs[:grayNodes])
				var proxy *faultproxy.Proxy
				if scenario.proxied {
					line := faultproxy.NewLine()
					b.Cleanup(line.Close) // after the proxy's Close
					var err error
					if proxy, err = faultproxy.Start(line, nodes[0]); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(proxy.Close)
					nodes[0] = proxy.Addr()
				}
				c := spec.new(b, nodes)
				prefix := "bench:gray:" + name + ":" + strconv.FormatInt(grayRuns.Add(1), 10)
				warmUp(b, c, prefix, grayGoroutines)
				restore := scenario.fault(b, proxy)
				defer restore()
				grayCalls(b, c, prefix)
			})
		}
	}
}

// silentLog discards go-redis's log.
type silentLog struct{}

func (silentLog) Printf(context.Context, string, ...any) {}

// grayCalls makes b.N lock+unlock calls from grayGoroutines goroutines and
// reports their times.
func grayCalls(b *testing.B, c contender, prefix string) {
	ctx := context.Background()
	var (
		next     atomic.Int64
		failed   atomic.Int64
		firstErr atomic.Pointer[error]
		times    = make([][]time.Duration, grayGoroutines)
		wg       sync.WaitGroup
	)
	b.ResetTimer()
	for g := range grayGoroutines {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				key := prefix + ":" + strconv.FormatInt(i, 10)
				start := time.Now()
				err := c.hold(ctx, key, false, nothing)
				times[g] = append(times[g], time.Since(start))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()

	all := slices.Concat(times...)
	slices.Sort(all)
	var total time.Duration
	for _, d := range all {
		total += d
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(len(all)), "ns/op")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(all, 1)), "max-ms")
	b.ReportMetric(float64(failed.Load())/float64(len(all)), "failed/op")
	if err := firstErr.Load(); err != nil {
		b.Logf("%d of %d calls failed, the first with: %v", failed.Load(), len(all), *err)
	}
}

// rawQuorumContender is BenchmarkGray's floor: SET key value NX PX, then
// DEL, each sent to every node at once with grayNodeTimeout on its context,
// each step over as soon as it is decided: a majority answered (OK to SET,
// anything to DEL) or a majority can no longer answer so. Requests still in
// flight finish in the background. That is the least a Redlock round can
// wait for; unlike a lock library it leaves a SET that lands after its DEL
// to expire with the TTL, and takes no fresh value per lock.
type rawQuorumContender struct {
	clients []*redis.Client
	// stragglers counts the requests in flight, waited for when the
	// benchmark ends.
	stragglers *sync.WaitGroup
}

func newRawQuorum(tb testing.TB, addrs []string) contender {
	tb.Helper()
	c := rawQuorumContender{clients: grayGoredisClients(tb, addrs), stragglers: new(sync.WaitGroup)}
	tb.Cleanup(c.stragglers.Wait) // before the clients close
	return c
}

func (c rawQuorumContender) hold(ctx context.Context, key string, wait bool, fn func()) error {
	if wait {
		return errors.New("bench: the raw contender makes single attempts only")
	}
	set := func(ctx context.Context, client *redis.Client) error {
		ok, err := client.SetNX(ctx, key, rawValue, grayTTL).Result()
		if err == nil && !ok {
			err = errNotAcquired
		}
		return err
	}
	del := func(ctx context.Context, client *redis.Client) error {
		return client.Del(ctx, key).Err()
	}
	if !c.round(ctx, set) {
		c.round(ctx, del)
		return errNotAcquired
	}
	fn()
	if !c.round(ctx, del) {
		return errors.New("bench: raw release not confirmed by a majority")
	}
	return nil
}

// round runs do on every node at once and reports whether a majority
// succeeded, as soon as that is decided.
func (c rawQuorumContender) round(ctx context.Context, do func(context.Context, *redis.Client) error) bool {
	n := len(c.clients)
	quorum := n/2 + 1
	results := make(chan error, n) // never blocks a straggler
	for _, client := range c.clients {
		c.stragglers.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, grayNodeTimeout)
			defer cancel()
			results <- do(ctx, client)
		})
	}
	ok, failed := 0, 0
	for ok < quorum && failed <= n-quorum {
		if err := <-results; err == nil {
			ok++
		} else {
			failed++
		}
	}
	return ok >= quorum
}
