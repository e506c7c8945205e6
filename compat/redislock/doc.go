// Package redislock is a drop-in replacement for github.com/bsm/redislock
// that runs on locksmith: the same names, signatures, options and errors,
// with the Redis server given as a locksmith [driver.Conn] instead of a
// go-redis client.
//
// A lock is a key on one Redis server holding the owner's token and
// metadata, with a TTL:
//
//	locker := redislock.New(goredis.New(rdb))
//	lock, err := locker.Obtain(ctx, "report:daily", time.Minute, nil)
//	if errors.Is(err, redislock.ErrNotObtained) {
//		return nil // someone else is on it
//	} else if err != nil {
//		return err
//	}
//	defer lock.Release(ctx)
//
// For a lock that survives the loss of a server, use several independent
// servers with locksmith's redlock package, or this module's redsync
// package.
//
// # Migrating from bsm/redislock
//
// Change the import path from github.com/bsm/redislock to
// github.com/locksmith-go/locksmith/compat/redislock, and wrap the go-redis
// client with locksmith's adapter (module
// github.com/locksmith-go/locksmith/driver/goredis):
//
//	locker := redislock.New(rdb)                 // before
//	locker := redislock.New(goredis.New(rdb))    // after
//
// A program on redigo or rueidis can use the package too, with the adapters
// of modules github.com/locksmith-go/locksmith/driver/redigo and
// github.com/locksmith-go/locksmith/driver/rueidis:
//
//	locker := redislock.New(redigo.New(pool))
//	locker := redislock.New(rueidis.New(client))
//
// Everything else stays: Obtain, ObtainMulti, [Options], the retry
// strategies, the methods of [Lock] and the errors.
//
// # Wire compatibility
//
// The key is the one given to Obtain and its value the token (by default 16
// random bytes in unpadded URL-safe base64, 22 characters) followed by the
// metadata, exactly as bsm/redislock stores them. A process on bsm/redislock
// and one on this package exclude each other on the same key, and either
// can take over the other's lock by obtaining it with its token
// ([Options].Token), then refresh or release it. Fleets can migrate one
// service at a time.
//
// # Errors
//
// [ErrNotObtained] and [ErrLockNotHeld] are matched with errors.Is. When a
// context ends the retries of Obtain or Refresh, its error is joined to the
// returned one, so errors.Is(err, context.DeadlineExceeded) works too. An
// error of the server or the connection is returned as the driver.Conn
// reported it. Bad arguments (a nil Conn or Context, no keys, a key given
// twice, a TTL below 1ms) are reported with a descriptive error that
// matches neither sentinel; nothing in this package panics on bad input.
//
// # Concurrency
//
// A Client and a Lock are safe for concurrent use, and so are the retry
// strategies of this package. No call starts a goroutine.
//
// # Differences from bsm/redislock
//
// They are deliberate, and none changes a signature:
//
//   - ObtainMulti, the package-level ObtainMulti and Lock.Keys, which
//     bsm/redislock has on its main branch but not in v0.9.4, are included.
//   - When the context ends the retries of Obtain, the error matches
//     ErrNotObtained as well as ctx.Err(): compare with errors.Is, not ==.
//   - Refresh retries errors of the server or connection as opt's
//     RetryStrategy says; by default it does not, as in v0.9.4.
//   - Release is not cancelled with the caller's context; it is bounded by
//     the lock's TTL instead.
//   - TTL, Refresh, Release, Key, Token and Metadata of a nil Lock return
//     an error or "" instead of panicking, and a TTL below 1ms is refused
//     (bsm/redislock would send it to Redis, where a Refresh with 0 deletes
//     the key).
//   - ObtainMulti refuses a key given twice, and takes again, with the
//     owner's token, a multi-key lock of which some keys have expired.
package redislock
