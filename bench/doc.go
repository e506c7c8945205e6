// Package bench measures the cost of a lock taken with locksmith next to the
// same lock taken with other Go Redis lock libraries and with no library at
// all, in one run against the same redis-server processes.
//
// Everything lives in the package's tests: TestMain starts five throwaway
// redis-server processes on loopback ports (the root module's
// internal/redisserver) and stops them when the run ends; the N = 1 and
// N = 3 benchmarks use the first one or three of them. Run it all with make bench-compare, which keeps the raw
// output in results/ and prints benchstat and ratio tables (cmd/ratios).
//
// # Contenders
//
// Every contender reaches the servers through go-redis v9 clients made with
// the same options (see goredisOptions), except locksmith's redigo,
// rueidis and valkey-go adapters, which use those clients with matching
// pool sizes. The
// go-redis options include ContextTimeoutEnabled for everyone, so that a
// deadline a library puts on a command bounds its socket reads and writes;
// it is what lets locksmith's go-redis adapter run a node's command without
// a goroutine of its own (see driver/goredis). The contexts the benchmarks
// pass have no deadline, so the client's own 5 s ReadTimeout stays the
// bound wherever a library sets none. All
// locks live for 10 s. Where a library has a per-node timeout it is the same
// for all: locksmith's default is 5% of the TTL (capped at 1 s) and
// redsync's is TTL × its default timeout factor of 0.05, 500 ms either way.
// bsm/redislock talks to a single node and has no per-node timeout; it
// bounds its own retry loop by the TTL.
//
//   - locksmith, locksmith-redigo, locksmith-rueidis, locksmith-valkeygo:
//     redlock.Client with default options over the goredis, redigo,
//     rueidis and valkeygo adapters.
//   - redsync: go-redsync/redsync v4 over its go-redis v9 pool, one Mutex per
//     lock as its API asks.
//   - redsync-redigo, redsync-rueidis: redsync over its redigo and rueidis
//     pools, on redigo pools and rueidis clients made as those of
//     locksmith-redigo and locksmith-rueidis: each adapter's peer on the
//     same client. redsync's valkey-go pool has no contender: it needs
//     valkey-go's valkeycompat module, which cannot be downloaded where
//     the bench is built.
//   - redislock: bsm/redislock, N = 1 only.
//   - raw: the floor, no library: SET key value NX with the TTL, then DEL,
//     with a constant value; on several nodes both commands are sent to all
//     nodes at once, one goroutine per node beyond the first.
//   - raw-script: the raw floor with locksmith's acquire and release scripts
//     sent with EVALSHA in place of SET NX and DEL: what Redis itself costs
//     to run a lock's scripts, which locksmith over go-redis cannot go below.
//
// # Benchmarks
//
// BenchmarkLockUnlock times one uncontended lock plus unlock on keys no one
// else uses, from one goroutine (mode=serial) and from GOMAXPROCS×4
// goroutines (mode=parallel), on 1, 3 and 5 nodes. BenchmarkHandoff times
// how long the lock on one key takes to pass from one of 8 goroutines to the
// next, with each library's default retry settings, and locksmith with its
// release notifications on (the default) and off (lib=locksmith-polling);
// besides ns/op it reports the hand-off latency (p50-ms, p99-ms, max-ms),
// handoffs/s and the longest wait of any one Lock call (max-wait-ms).
//
// BenchmarkDelayed times one uncontended lock plus unlock from one
// goroutine, as mode=serial, with every node behind an in-process proxy
// (internal/faultproxy) adding 250 µs to every chunk in each direction, on 1,
// 3 and 5 nodes; beside the contenders it times a PING sent to the N
// servers at once without and through the proxies, to measure the delay the
// proxy really adds and the floor under a fan-out.
//
// BenchmarkGray times lock+unlock on 5 nodes while the first is healthy,
// stopped with SIGSTOP, 50 ms slower to reply (through an in-process proxy,
// internal/faultproxy) or refusing connections (the proxy's port closed),
// from 4 goroutines on keys used once each, and reports the per-call p50,
// p99 and max. Its locks live for 2 s, at which every contender waits
// 100 ms for one node: the defaults of locksmith and redsync, the go-redis
// clients' timeouts and the raw floor's deadline. Besides the locksmith
// variants it runs redsync with its defaults and with WithFailFast(true),
// and a raw floor whose SET NX and DEL rounds end once a majority has
// answered. run.sh runs it apart, for a fixed number of calls (see
// docs/performance.md).
//
// BenchmarkSemaphoreUncontended times one Acquire plus Unlock of a permit
// (lib=locksmith-semaphore) beside one Lock plus Unlock (lib=locksmith-lock)
// on the same nodes, from one goroutine, over go-redis, on 1, 3 and 5 nodes
// and at limits 1, 4 and 16, on names no other goroutine uses.
// BenchmarkSemaphoreContended has 16 workers on 4 Clients compete for the
// 4 permits of one semaphore on 3 and 5 nodes, each holding a permit for 1
// or 10 ms and pausing for none or twice the hold before it asks again.
// Beside locksmith's Semaphore it runs what users do without one: 4
// redsync mutexes that each worker tries in turn with TryLockContext,
// sleeping redsync's default retry delay (50 to 250 ms) or 1 ms after a
// pass that found them all taken. It reports grants/s; busy-%, the share
// of the time during which someone waits that all 4 permits are held, from
// the workers' own timestamps; the waits' p50, p99 and max; and the acquire
// rounds sent per grant, for locksmith split by what the nodes answered
// the failed ones. BENCH=Semaphore runs both.
package bench
