// Package redlock provides distributed locks over several independent
// Redis nodes, with the Redlock algorithm.
//
// A [Client] grants a lock when a majority of its nodes grant it. Each node
// is reached through a [driver.Conn]; an adapter module builds one from the
// Redis client the application already has:
//
//	var conns []driver.Conn
//	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
//		conns = append(conns, goredis.New(redis.NewClient(&redis.Options{Addr: addr})))
//	}
//	locker, err := redlock.New(conns)
//	if err != nil {
//		return err
//	}
//	defer locker.Close(ctx)
//
//	lock, err := locker.Lock(ctx, "invoice:42", 10*time.Second)
//	if err != nil {
//		return err
//	}
//	defer lock.Unlock(ctx)
//	// Work on invoice 42, finishing before lock.ValidUntil().
//
// # Locks
//
// [Client.Lock] takes a lock on a resource for a TTL. The lock's key on each
// node is the resource name, and its value is a fresh random string.
// Processes using other Redlock libraries on the same resource therefore
// exclude each other. [WithKeyPrefix] changes the key name.
//
// A lock is valid until [Lock.ValidUntil]: the attempt's start, on the
// monotonic clock, plus the TTL, less a drift allowance ([WithDriftFactor]).
// The holder must finish, extend the lock or stop using the resource
// before then. [Lock.Extend] resets the TTL; [Lock.Unlock] releases the
// lock. Only the owner's value can extend or release it, and an expired
// key is never created again.
//
// [Client.LockMulti] takes one lock over several resources: each node grants
// all keys or none. [Client.Resume] takes over a lock from its key and value,
// for example in another process.
//
// [Client.Semaphore] hands out at most a limit of permits on a name at
// once, each a Lock on one of limit slots ([Semaphore.Acquire]), safe
// over the quorum for every limit.
//
// [Client.Election] elects one leader on a name: [Election.Campaign] waits
// until the caller leads, [Election.Do] runs a function for as long as it
// does, and [Election.Leader] and [Election.Observe] tell the others who
// leads. Each new leader has a greater term ([Leadership.Term]), a fencing
// token for the resource it acts on.
//
// # Waiting
//
// Lock retries while the resource is held elsewhere or too few nodes
// answer. By default it retries up to 32 times, 50 to 250 ms apart: about
// 5 seconds of pauses, plus the time of the attempts. [WithRetryStrategy] changes that, and the caller's
// context ends the wait at any time. [Client.TryLock] makes one attempt.
//
// A waiting Lock call also listens for the release of the resource, and
// tries again as soon as a majority of the nodes announced one. A contended
// lock thus passes to the next waiter in about one round trip.
// [WithReleaseNotifications] turns this off.
//
// # Automatic renewal
//
// [Client.Do] runs a function while holding a lock, and releases the lock
// when the function returns. [Lock.KeepAlive] does the same for a lock
// already held. Both extend the lock before its validity runs low
// ([WithRenewal]). Both cancel the context they hand out, before the
// validity ends, as soon as the lock can no longer be guaranteed; its cause
// then matches [ErrLockLost]. [WithMaxHold] and [WithMaxRenewals] bound the
// renewal ([ErrHoldLimit]).
//
// Check that context's Err right before each use of the resource.
//
// # Fencing tokens
//
// A paused process can resume after its lock has expired and another holder
// has taken over. With [WithFencing], every lock carries a token
// ([Lock.Token]). The token is greater than that of every lock on the same
// resource acquired before it started. A resource that rejects tokens lower
// than the highest it has seen (see package fence) is safe from such a
// process.
//
// The token costs a second round of requests per acquisition. Each
// resource gets a counter key on every node, which never expires:
// "{key}:fencing-token", or key + ":fencing-token" when the key has a hash
// tag. Keys ending in ":fencing-token" are reserved for the counters.
// Fencing needs persistence on every node (see below).
//
// # Operational requirements
//
// The lock holds only while no node forgets it before its TTL runs out. Run
// every node with:
//
//   - maxmemory-policy noeviction, so lock keys are never evicted;
//   - appendonly yes with appendfsync always, or, for plain locks only, a
//     restart delayed by more than the longest TTL in use;
//   - no asynchronous replica promoted behind the node's address.
//
// Clocks need not agree on the time, but they must run at about the same
// rate: [WithDriftFactor] covers small differences. Use an odd number of
// nodes, 3 or 5: [New] refuses an even count without [WithEvenNodes].
//
// # Slow and failing nodes
//
// A call returns as soon as a quorum decided it. It waits for a node at most
// the per-node timeout ([WithNodeTimeout]), whatever the node's Redis client
// does. Keep the client's own retries and timeouts within it.
//
// A new lock skips the nodes that are behind the others or failing, as
// many as still leave a quorum. Such a lock is held on the other nodes,
// with less fault tolerance; each skipped node's [NodeError] matches
// [ErrNodeSkipped] and names the node's last error.
// [WithSkipUnhealthyNodes] turns this off.
//
// # Observability
//
// Nothing is logged or recorded by default. [WithLogger] logs each step of a
// lock's life with log/slog. [WithObserver] sets callbacks for the same
// events; package [github.com/locksmith-go/locksmith/redlock/observe] has
// them. The module github.com/locksmith-go/locksmith/otel turns them into
// OpenTelemetry metrics and spans. [Client.Inspect] reads a resource's state
// on every node, for operators' tools.
//
// # Errors
//
// A call that did not get a lock returns an error matching [ErrNotAcquired].
// An Extend, Unlock, Resume or Proclaim that a quorum did not confirm
// returns one matching [ErrNotHeld]; [ErrExpired], [ErrReleased] and
// [ErrLockLost] match it too. A [*QuorumError], reachable with errors.As,
// holds the votes and each failed node's [*NodeError]. [Election.Leader]
// returns an error matching [ErrNoLeader] when no one leads. When the caller's context ends, its error
// stays in the chain. Bad arguments and options match [ErrInvalidArgument];
// nothing panics on bad input. Calls after [Client.Close] return [ErrClosed].
//
// # Concurrency
//
// A Client and a Lock are safe for concurrent use. A Lock's extend rounds
// run one at a time. [Lock.ValidUntil] is never later than what a quorum of
// nodes may hold. A running KeepAlive follows every extension. No extend
// round starts once Unlock has been called.
//
// A Client owns what outlives its calls: requests still on their way to
// slow nodes, renewals, waiting calls' subscriptions and the goroutines
// of [Election.Observe]. [Client.Close]
// ends them and waits for them. Close the Client first, then the Redis
// clients behind its Conns.
package redlock
