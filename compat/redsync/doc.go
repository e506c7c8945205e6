// Package redsync is a drop-in replacement for github.com/go-redsync/redsync/v4
// that runs on locksmith: the same names, signatures, options, defaults and
// errors, and pools built by the same NewPool functions under the same
// package paths.
//
// A mutex is granted when a majority of the nodes given to [New] set its key
// (the mutex's name) to a fresh random value within its validity time, as
// the Redlock algorithm describes:
//
//	rs := redsync.New(goredis.NewPool(rdb1), goredis.NewPool(rdb2), goredis.NewPool(rdb3))
//	mutex := rs.NewMutex("invoice:42", redsync.WithExpiry(10*time.Second))
//	if err := mutex.LockContext(ctx); err != nil {
//		return err
//	}
//	defer mutex.UnlockContext(ctx)
//
// # Migrating from go-redsync/redsync
//
// Change the import paths: github.com/go-redsync/redsync/v4 becomes
// github.com/locksmith-go/locksmith/compat/redsync, and each package under
// it the package of the same path under this one:
//
//	github.com/go-redsync/redsync/v4/redis                -> .../compat/redsync/redis
//	github.com/go-redsync/redsync/v4/redis/goredis/v9     -> .../compat/redsync/redis/goredis/v9
//	github.com/go-redsync/redsync/v4/redis/redigo         -> .../compat/redsync/redis/redigo
//	github.com/go-redsync/redsync/v4/redis/rueidis        -> .../compat/redsync/redis/rueidis
//
// Nothing else changes: [redis.Pool], NewPool of each client package with
// the same argument, redsync.New(pools...), NewMutex and its options, the
// Mutex methods and the errors. Each client package is a module of its own
// (see package [redis]), so a program downloads only the client it uses. A
// [redis.Pool] is a locksmith driver.Conn: the Conns of locksmith's
// adapters are pools too.
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
// errors.Join. A Lock whose context ends returns ErrFailed itself, as
// go-redsync/redsync does, so code comparing with == keeps working; the
// errors of the nodes, such as a RedisError of a request the context cut
// short, match ctx.Err().
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
//   - With [WithFailFast] a round also returns once nodes that failed and
//     nodes held by another owner together leave no quorum to reach,
//     rather than only once a quorum is held by another owner.
//   - The drift allowance includes a 2ms floor, so [Mutex.Until] is up to
//     2ms earlier.
//   - A TryLock whose context is already done returns an error matching
//     both ErrFailed and ctx.Err() without contacting the nodes.
//   - A [redis.Pool] has no Get method: each script runs on the client's
//     own connection pool.
//   - Extend of a mutex with no value is refused with ErrExtendFailed, so
//     WithSetNXOnExtend cannot store an empty value.
//   - No pools, a nil or repeated node, and out-of-range options are
//     reported as errors instead of failing later or panicking.
package redsync
