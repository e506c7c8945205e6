// Package redlock implements distributed locks over several independent
// Redis nodes with the Redlock algorithm.
//
// A lock is granted when a majority of the nodes given to [New] set the
// lock's key within its validity time. Each node is reached through a
// [driver.Conn]; the adapter modules build one from the Redis client an
// application already has:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"})
//	client, err := redlock.New([]driver.Conn{goredis.New(rdb), ...})
//	...
//	lock, err := client.Lock(ctx, "invoice:42", 10*time.Second)
//	if err != nil {
//		return err
//	}
//	defer lock.Unlock(ctx)
//
// # How a lock is acquired
//
// Each attempt draws a fresh 128-bit random value and asks every node at
// once, each within a per-node timeout far below the TTL, to set the key to
// that value if it does not exist. With start taken on the monotonic clock
// before the requests and elapsed the time they took, the lock is granted
// when at least len(nodes)/2+1 nodes agreed and
//
//	validity = ttl - elapsed - (ttl*driftFactor + 2ms) > 0
//
// It is then valid until start + ttl - drift ([Lock.ValidUntil]). A failed
// attempt is released on every node, whatever it answered, and Lock
// retries after a jittered delay chosen by its [RetryStrategy]. That
// release, where it fails on a node that did not refuse the attempt and
// whose last 3 requests did not all fail, is sent again up to three times,
// 1, 2 and 4 ms apart, within the per-node timeout: a key left there would
// refuse every lock on it until its TTL ran out.
//
// Every script compares the stored value with the caller's before touching
// a key, so only the owner can extend or release a lock, and an extension
// never re-creates a key that has expired. Every script is also idempotent
// for the owner, since a Redis client may re-send a command whose
// connection broke after it was sent: an acquire that finds the caller's
// own value is a grant, and a release or extend that finds the keys already
// as it wants them says so.
//
// On the wire a lock is a plain string key named after the resource and
// holding the random value, as in the other Redlock implementations, so
// processes using different libraries on the same resource exclude each
// other. [WithKeyPrefix] changes the key name.
//
// # Fast hand-off
//
// A Lock call that has to wait does not only sleep out its retry delay: it
// also listens for the release of its keys, and tries again as soon as a
// majority of the nodes has announced one. The release script publishes on
// a channel derived from each key it deletes (the key followed by
// ":released", inside a hash tag of the key when it has none, so the channel
// shares the key's cluster slot), and the waiting Client subscribes to it
// on every node whose Conn implements [driver.Notifier], as all three
// adapters do. A contended lock then passes to the next waiter in about
// one round trip instead of after tens or hundreds of milliseconds.
//
// The waiting Lock calls of a Client queue up per key, first come first
// served. A release wakes only the first of them, once a majority of the
// nodes has announced it, so one release costs one attempt rather than one
// per waiter; the others keep polling at their retry delays, and each
// moves up as those before it get the lock or give up, so none is passed
// over for ever. When that attempt is refused (a node it needed had not
// released yet, or it skipped or failed on one), each further node that
// announces the same release wakes the call again. A Client subscribes once per key and
// node however many of its calls wait, and ends the subscriptions when the
// last of them returns; the adapters share one pub/sub connection per
// node among all subscriptions.
//
// Notifications only make waiting shorter. A lost message, a node whose
// Conn cannot subscribe, a lock released by another library (which
// publishes nothing) or one that expires all leave the waiter to its
// polling, as before. A call that had to set up the subscriptions first
// retries once at once, since a release in the meantime went unheard; that
// attempt counts against its retry budget. Listening is on by default;
// [WithReleaseNotifications](false) turns it off.
//
// # Automatic renewal
//
// [Client.Do] runs a function while holding a lock and releases it after;
// [Lock.KeepAlive] does the same for a lock held already. Both extend the
// lock before its validity runs low ([WithRenewal]) and cancel the context
// they hand out, before the validity ends, as soon as the lock can no longer
// be guaranteed; context.Cause then matches [ErrLockLost]. [WithMaxHold] and
// [WithMaxRenewals] bound the renewal ([ErrHoldLimit]).
//
// # Fencing tokens
//
// With [WithFencing] every lock carries a token ([Lock.Token]) strictly
// greater than that of every lock on the same resource acquired before it
// started, and unique. A resource that rejects tokens lower than the highest
// it has accepted (see package fence) cannot be overwritten by a holder that
// was paused past its lock's validity.
//
// The maximum of per-node counters is not monotonic on its own, so a fenced
// acquisition takes two rounds: the first sets the lock keys and reads each
// node's counter, the token is one more than the highest counter among the
// nodes that granted, and the second raises the counters to the token on
// the nodes that still hold the lock. The token is handed out only when
// both rounds reach a quorum within the lock's validity. Any later grant's
// first round meets a node of this grant's second round, so it sees a
// counter at least this token.
//
// Each resource gets one counter key per node, which never expires and
// never decreases: "{key}:fencing-token", or key + ":fencing-token" when the
// key has a hash tag, so that it shares the key's cluster hash slot. A key
// without a hash tag that contains '}' cannot be fenced. Keys ending in
// ":fencing-token" (after the key prefix) are reserved for the counters:
// every Client, fenced or not, refuses to lock them with an error matching
// [ErrInvalidArgument], and a fenced lock whose counter key holds anything
// but a token fails with a node error that says so. A multi-key lock gets
// one token, greater than the counters of all its resources. Delete the counters of a resource
// only once nothing will lock it again: tokens would start over at 1.
//
// Fencing needs the operational conditions below, a fixed set of nodes, and
// persistence on every node: appendonly yes with appendfsync always. The
// alternative of a restart delayed past the longest TTL is for plain locks
// only: it lets lock keys expire, but counters never do, so a node that
// comes back empty, while another is briefly unreachable, can let a grant
// see no counter above 0 and hand out a token lower than one already given.
//
// # Inspecting a resource
//
// [Client.Inspect] reads a resource's lock key and fencing counter on every
// node with a read-only script, and tells whether a quorum holds one value
// and until when at the latest ([Inspection]). It never changes a key, so
// an operator's tool can run it at any time beside the locks in use.
//
// # Observability
//
// [WithObserver] sets callbacks for every step of a lock's life (package
// [github.com/locksmith-go/locksmith/redlock/observe] has the events, their
// order and the rules callbacks follow);
// [WithLogger] logs the same events with log/slog. The module
// github.com/locksmith-go/locksmith/otel turns them into OpenTelemetry
// metrics and spans. Without either, nothing is logged or recorded.
//
// # Custom scripts
//
// The Lua scripts a Client runs on each node can be replaced, or the
// defaults wrapped, and given extra KEYS and ARGV, with [WithScripts]
// ([Scripts]). A custom script is loaded with SCRIPT LOAD and run
// with EVALSHA, falling back to EVAL when a node has forgotten it, like the
// defaults. Each must keep the contract below, on which the lock's safety
// rests.
//
// KEYS holds the lock's keys (one per resource, with the key prefix, in the
// order given; n of them), followed by the extra keys. ARGV holds the
// arguments below, followed by the extra arguments. A script left at its
// default gets neither, since the defaults treat every entry of KEYS as a
// lock key; a script that wraps a default and takes extra keys must
// therefore change the default's loops over #KEYS to stop at n.
//
//   - acquire: ARGV[1] is the new owner's random value, ARGV[2] the TTL in
//     milliseconds. It sets every lock key to ARGV[1] with that TTL and
//     returns 1, or, when any lock key exists, touches no lock key and
//     returns 0. It should return 1 also when every lock key already holds
//     ARGV[1], leaving their TTL alone: the request was re-sent. Any other
//     reply counts as a node error.
//   - extend: ARGV[1] is the owner's value, ARGV[2] the new TTL in
//     milliseconds. Only when every lock key still holds ARGV[1] does it
//     set their TTL and return 1; otherwise it returns 0 and creates no
//     key: an expired lock stays expired.
//   - release: ARGV[1] is the owner's value. It deletes each lock key that
//     still holds ARGV[1], and only those, and returns the number of lock
//     keys that are released: deleted or already gone (extra keys are not
//     counted; a key held by another value is not released). It may do
//     more, such as publishing a release notification for clients waiting
//     on the key; a release script that does not leaves waiting clients to
//     find out by retrying. It also runs after every failed attempt, on
//     every node, whether or not it holds the keys, and there up to four
//     times on a node where it fails, even when the failed try was applied.
//
// Every script compares the stored value with ARGV[1] before touching a
// lock key, names every key it touches in KEYS (Redis Cluster requires it,
// and the extra keys must share the lock keys' hash slot), and never builds
// a key or a command from ARGV. A custom acquire script cannot be combined
// with [WithFencing].
//
// # Operational requirements
//
// Redlock's guarantee holds only if a node never forgets a lock before its
// TTL runs out. Run every node with:
//
//   - maxmemory-policy noeviction (or no maxmemory), so lock keys are never
//     evicted;
//   - appendonly yes with appendfsync always, or else, for plain locks
//     only, a restart delayed by more than the longest TTL in use, so a
//     crashed node does not come back without the keys it granted. Fenced
//     locks ([WithFencing]) require appendfsync always on every node: their
//     counters never expire, so no delay makes up for losing them;
//   - no asynchronous replica promoted behind the node's address: a
//     failover can lose the latest writes. A Cluster or Sentinel deployment
//     used as one node has this weakness; independent masters do not.
//
// Clocks need not be synchronised, but they must run at about the same
// rate: the drift allowance ([WithDriftFactor]) covers small differences.
//
// # Errors
//
// Failures to obtain or keep a lock match a sentinel with errors.Is:
// [ErrNotAcquired] for Lock and TryLock, [ErrNotHeld] for Extend, Unlock and
// Resume ([ErrExpired] and [ErrReleased] match it too). The details of the
// round of requests behind them are in a [*QuorumError], reachable with
// errors.As, which lists per-node failures as [*NodeError]. When the
// caller's context ends, its error is kept in the chain, so
// errors.Is(err, context.Canceled) works. Bad arguments and options match
// [ErrInvalidArgument]; nothing here panics on bad input. Calls after
// [Client.Close] return [ErrClosed].
//
// # Concurrency
//
// A [Client] and a [Lock] are safe for concurrent use. A Lock may be used
// from many goroutines at once, also while [Lock.KeepAlive] renews it:
//
//   - its extend rounds (Extend, renewals, and a [Client.Resume] of its
//     value on the same Client, which returns the same Lock) run one at a
//     time, each after the previous one ended;
//   - [Lock.ValidUntil] is never later than the earliest expiry that a
//     quorum of nodes may hold: a round that may shorten the keys lowers it
//     before any request is sent, only a round that a quorum confirmed moves
//     it later, and after a request whose outcome is unknown (a timeout, a
//     lost reply) later rounds count with the shorter of their TTL and that
//     request's, since it may still be applied after them;
//   - a running KeepAlive follows every change of the validity: its context
//     is cancelled before ValidUntil, however the holder extended the lock;
//   - once Unlock has been called no extend round starts, and the KeepAlive
//     context is cancelled before Unlock returns.
//
// # Closing a Client
//
// A call returns as soon as a quorum decided it: granted, or so many
// nodes refused or failed that no quorum can be reached. Its requests to
// the nodes that had not answered go on in the background, also when the
// caller cancels ctx afterwards, each bounded by the per-node timeout.
// Each node gets a lock's requests one at a time, in the order they were
// made, so a grant that arrives late is followed by the lock's release;
// and a Client's next lock on the same keys follows them, so that a
// TryLock right after an Unlock does not find the key still held on a
// slow node. Whatever the nodes and the Redis clients do, a call returns
// by the per-node timeout of its last round, or when ctx ends.
//
// The Client owns those requests, the renewals of [Lock.KeepAlive] and
// [Client.Do], and the subscriptions of Lock calls waiting for a release.
// [Client.Close] ends them, releases the locks still held and waits for
// all of it. Close the Client, then your Redis clients:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	defer rdb.Close()
//	locker, err := redlock.New([]driver.Conn{goredis.New(rdb)})
//	...
//	defer locker.Close(context.Background()) // runs before rdb.Close
//
// # Nodes behind the others, and failing nodes
//
// A node whose requests are still running a tenth of the per-node timeout
// (at least 5 ms) after their rounds returned is behind: slow, stopped or
// overloaded. It stays so until all of them have ended and then until a
// probe, the acquire of the next lock, is answered within that limit of its
// round's return; it gets one probe at a time, so that a node that is slow
// rather than stopped is not sent every lock's requests again each time it
// drains. Requests that a caller's context cut short neither make a node
// behind nor end its being so. A node whose last 3
// requests to end failed, with no success since, is failing: it refuses
// connections, say, or answers with errors (CROSSSLOT refusals excepted).
// It stays so until a request succeeds, and gets one probe per node timeout
// (at most a second) after its last failure: the acquire of the next lock.
//
// While a node is behind or failing, a new lock's acquire is not sent to
// it, for at most as many nodes as leave a quorum, failing nodes first (a
// request sent to a node behind may still be answered; one sent to a
// failing node fails), and never for a lock whose keys may lie in different
// hash slots; and neither are that lock's extends and releases: the lock
// lives on the other nodes, with that much less fault tolerance, and the
// node's [NodeError] matches [ErrNodeSkipped]; it counts with the refusals
// when an extend decides whether the lock is lost. Requests sent to a node
// behind would queue behind the ones it has not answered, in the Redis
// client's pool and on the node, until they time out; under load the client
// then drops connections and dials new ones at the node's slowest. Requests
// sent to a failing node would fail, each after a dial or an error reply.
// Locks acquired before the node fell behind or began failing send it every
// request as usual. [WithSkipUnhealthyNodes](false) sends every request to
// every node.
package redlock
