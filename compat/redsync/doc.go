// Package redsync is a drop-in replacement for github.com/go-redsync/redsync/v4
// that runs on locksmith: the same names, signatures, options, defaults and
// errors, with the Redis nodes given as locksmith [driver.Conn] values
// instead of redsync pools.
//
// A mutex is granted when a majority of the nodes given to [New] set its key
// (the mutex's name) to a fresh random value within its validity time, as
// the Redlock algorithm describes:
//
//	rs := redsync.New(goredis.New(rdb1), goredis.New(rdb2), goredis.New(rdb3))
//	mutex := rs.NewMutex("invoice:42", redsync.WithExpiry(10*time.Second))
//	if err := mutex.LockContext(ctx); err != nil {
//		return err
//	}
//	defer mutex.UnlockContext(ctx)
//
// # Migrating from go-redsync/redsync
//
// Change the import path from github.com/go-redsync/redsync/v4 to
// github.com/locksmith-go/locksmith/compat/redsync, and build each node
// with locksmith's adapter for the Redis client in use instead of redsync's
// pool. For go-redis v9 (module github.com/locksmith-go/locksmith/driver/goredis):
//
//	pool := goredis.NewPool(rdb)   // before: github.com/go-redsync/redsync/v4/redis/goredis/v9
//	pool := goredis.New(rdb)       // after:  github.com/locksmith-go/locksmith/driver/goredis
//
// For redigo (module github.com/locksmith-go/locksmith/driver/redigo):
//
//	pool := redigo.NewPool(redigoPool) // before: github.com/go-redsync/redsync/v4/redis/redigo
//	pool := redigo.New(redigoPool)     // after:  github.com/locksmith-go/locksmith/driver/redigo
//
// For rueidis (module github.com/locksmith-go/locksmith/driver/rueidis):
//
//	pool := rueidis.NewPool(rueidiscompat.NewAdapter(client)) // before: github.com/go-redsync/redsync/v4/redis/rueidis
//	pool := rueidis.New(client)                               // after:  github.com/locksmith-go/locksmith/driver/rueidis
//
// Everything else stays: redsync.New(pool, ...), NewMutex and its options,
// the Mutex methods and the errors.
//
// # Wire compatibility
//
// The key is the mutex's name and the value 16 random bytes in standard
// base64, exactly as go-redsync/redsync stores them, so a process on
// go-redsync/redsync and one on this package exclude each other on the same
// name, and either can extend or release the other's lock given its value
// ([WithValue]). Fleets can migrate one service at a time.
//
// # Errors
//
// The errors are go-redsync/redsync's: [ErrFailed], [ErrExtendFailed] and
// [ErrLockAlreadyExpired] matched with errors.Is; [*ErrTaken],
// [*ErrNodeTaken] and [*RedisError] found with errors.As (use pointer
// targets, as with go-redsync/redsync). Per-node failures are combined with
// errors.Join. When the caller's context ends, its error stays in the chain.
//
// A Redsync or Mutex that cannot work as configured (no nodes, a nil or
// repeated node, an out-of-range option) reports a descriptive error,
// matching none of the above, from every method that would contact the
// nodes. Nothing in this package panics on bad input.
//
// # Concurrency
//
// A Redsync is safe for concurrent use. The methods of a Mutex may be
// called concurrently, but a Mutex holds one lock at a time: give each
// goroutine that locks its own Mutex. Each round of requests contacts all
// nodes at once, with one goroutine per node beyond the first (one per node
// with [WithFailFast]). With WithFailFast a round may return before its
// slowest requests, which then end within the round's timeout; otherwise
// no goroutine outlives the call that started it.
//
// # Differences from go-redsync/redsync
//
// They are deliberate, and none changes a signature:
//
//   - Unlock and the cleanup of a failed attempt are not cancelled with the
//     caller's context (they are still bounded by the round timeout), so a
//     caller giving up still releases its lock.
//   - Extend, Valid and Unlock are bounded by the round timeout of
//     [WithTimeoutFactor], as Lock is.
//   - Each attempt of Lock uses a fresh value.
//   - The drift allowance includes a 2ms floor, so [Mutex.Until] is up to
//     2ms earlier.
//   - The error of a Lock whose context ended matches ctx.Err() as well as
//     ErrFailed: compare with errors.Is, not ==.
//   - Extend of a mutex with no value is refused with ErrExtendFailed, so
//     WithSetNXOnExtend cannot store an empty value.
//   - No nodes, a nil or repeated node, and out-of-range options are
//     reported as errors instead of failing later or panicking.
package redsync
