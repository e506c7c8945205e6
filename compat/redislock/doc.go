// Package redislock is a drop-in replacement for github.com/bsm/redislock
// that runs on locksmith: the same names, signatures, options and errors,
// over the same go-redis client.
//
// A lock is a key on one Redis server holding the owner's token and
// metadata, with a TTL:
//
//	locker := redislock.New(rdb) // rdb is a go-redis v9 client
//	lock, err := locker.Obtain(ctx, "report:daily", time.Minute, nil)
//	if err == redislock.ErrNotObtained {
//		return nil // someone else is on it
//	} else if err != nil {
//		return err
//	}
//	defer lock.Release(ctx)
//
// For a lock that survives the loss of a server, use several independent
// servers with locksmith's redlock package, or compat's redsync package.
//
// # Migrating from bsm/redislock
//
// Change the import path from github.com/bsm/redislock to
// github.com/locksmith-go/locksmith/compat/redislock (module of the same
// path, which depends on go-redis v9 as bsm/redislock does). Nothing else
// changes: [New], Obtain and ObtainMulti take the go-redis client, and
// [Options], the retry strategies, the methods of [Lock] and the errors
// are the same.
//
// A program on redigo or rueidis can use the package too, with
// [NewFromConn] and the adapters of modules
// github.com/locksmith-go/locksmith/driver/redigo and
// github.com/locksmith-go/locksmith/driver/rueidis:
//
//	locker := redislock.NewFromConn(redigo.New(pool))
//	locker := redislock.NewFromConn(rueidis.New(client))
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
// The errors are bsm/redislock's, returned as it returns them, so code
// comparing with == keeps working: [ErrNotObtained] when the key is held by
// another owner and the retry strategy gives up (or a Refresh finds the
// lock gone), [ErrLockNotHeld] when a Release finds it gone, and ctx.Err()
// itself (context.DeadlineExceeded, context.Canceled) when the context
// ends the tries of Obtain. errors.Is works too. An error of the server or
// the connection is returned as the client reported it. Bad arguments (a
// nil client or Context, no keys, a key given twice, a TTL below 1ms) are
// reported with a descriptive error that matches neither sentinel; nothing
// in this package panics on bad input.
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
//   - NewFromConn takes any locksmith driver.Conn, for programs on redigo
//     or rueidis.
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
//   - An Obtain that fails after its command may have reached the server
//     (the reply was lost, or the context ended after the write) deletes
//     the key if it holds the value it tried to store, as locksmith's
//     redlock does after a failed attempt; bsm/redislock leaves it held for
//     its whole TTL under a token the caller never learns, and refuses the
//     caller's retry. With Options.Token the key is left alone: the caller
//     knows the token and takes the lock again with it.
//   - A Client over a *redis.Ring fails every call: a Ring hands the keys
//     of a shard it counts as down to another shard, where a second owner
//     obtains a lock that the first still holds.
package redislock
