// Package driver defines the interface between locksmith and a Redis client.
//
// Most programs never use this package directly: they build a [Conn] with one
// of the adapter modules (driver/goredis, driver/redigo, driver/rueidis) and
// hand it to redlock.New. This package is for people writing an adapter for
// another client, and its contract is checked by the driver/drivertest
// conformance suite. Package driver/adapter holds the pieces that such an
// adapter shares with locksmith's own.
//
// A Conn has exactly three methods. Anything more a client can offer is an
// optional interface in this package, found by a type assertion, and each one
// documents what locksmith does when a Conn does not implement it.
//
// # Replies
//
// An adapter normalizes every successful reply to these Go types:
//
//   - integer reply: int64
//   - bulk string or status reply: string
//   - array reply: []any, its elements normalized by the same rules
//   - nil reply (nil bulk string, nil array, RESP3 null): nil
//
// A Redis error reply is returned as a non-nil error, never as a value.
//
// # Errors
//
// [Conn.EvalSha] reports a script the server does not know (a NOSCRIPT error
// reply) with an error that satisfies errors.Is(err, [ErrNoScript]). An
// adapter detects that with its client's own typed check where the client has
// one, or by the NOSCRIPT error prefix that Redis defines for this case.
//
// # Contexts
//
// Every method must honour its ctx (see [Conn]). locksmith makes many of
// its calls with a context that nothing but its deadline ends: with several
// nodes, every call of a round (acquiring, extending or releasing a lock)
// gets one, which keeps the values of the caller's ctx but none of its
// cancellation, has the node timeout as its deadline, and is cancelled only
// after the call has returned; so does a call whose caller's ctx can never
// be cancelled. Inline, in package
// [github.com/locksmith-go/locksmith/driver/adapter], reports such
// a context. An adapter whose client bounds every wait and every socket
// read and write of a call by the context's deadline may run a call with
// such a context on the calling goroutine: the client returns by the
// deadline, which is when the context ends. So may an adapter whose client
// bounds a command by the deadline only on a connection in hand, on a
// connection it kept from an earlier call (adapter.Spare), as the redigo
// and rueidis adapters do. Any other context can end
// before its deadline, so a call with it must return when it ends even if
// the client would go on waiting: through adapter.Run, or an equivalent
// that leaves the client's call to finish on a goroutine of its own.
//
// A round of several nodes runs each call on a goroutine of locksmith's
// that it stops waiting for at the call's deadline: the round returns by
// then whatever the call does, and redlock's Client.Wait stops counting a
// request a per-node timeout after its deadline (three after its round
// started). adapter.Run recognizes the contexts of those calls (which
// adapter.Unwaited reports) and runs the
// client on that goroutine rather than on one of its own, counting the
// call in its Background until it returns: a call that overruns its
// deadline then holds locksmith's goroutine, not a caller, and the Conn's
// [Waiter] waits for it. An adapter that runs its calls through adapter.Run
// needs to do nothing for this.
//
// # Concurrency
//
// Every method of a Conn may be called concurrently from many goroutines.
package driver

import (
	"context"
	"errors"
)

// ErrNoScript is matched by the error that [Conn.EvalSha] returns when the
// server has no script with the given digest, for example after a restart,
// SCRIPT FLUSH or a failover. Callers recover by sending the script source
// with [Conn.Eval].
var ErrNoScript = errors.New("driver: NOSCRIPT no matching script")

// Conn is one Redis node as locksmith sees it: a server, or a Redis Cluster
// or Sentinel deployment addressed as a single node through its client.
//
// A Conn wraps a client or pool owned by the caller; it does not close it.
//
// Every method must honour ctx: when ctx is done before the reply arrives,
// the method returns promptly with an error that wraps ctx.Err().
type Conn interface {
	// Eval runs script with EVAL, passing keys as KEYS and args as ARGV,
	// and returns the script's reply normalized as the package documentation
	// describes. keys and args may be nil or empty.
	Eval(ctx context.Context, script string, keys []string, args []string) (any, error)

	// EvalSha runs the script whose SHA-1 digest is sha1 with EVALSHA. It
	// returns an error matching ErrNoScript when the server does not have
	// that script cached.
	EvalSha(ctx context.Context, sha1 string, keys []string, args []string) (any, error)

	// ScriptLoad caches script on the server with SCRIPT LOAD and returns
	// the digest the server reports. On a deployment of several servers
	// (a cluster) it loads the script on every server that may run it.
	ScriptLoad(ctx context.Context, script string) (sha1 string, err error)
}
