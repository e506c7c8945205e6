// Package driver defines the interface between locksmith and a Redis client.
//
// Most programs never use this package directly: they build a [Conn] with
// one of the adapter modules (driver/goredis, driver/redigo, driver/rueidis,
// driver/valkeygo) and hand it to redlock.New. This package is for people
// writing an adapter for another client, and its contract is checked by the
// driver/drivertest conformance suite. [MarkNoScript] and package driver/pubsub hold what
// such an adapter shares with locksmith's own.
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
// one, or by the NOSCRIPT error prefix that Redis defines for this case,
// and marks it with [MarkNoScript].
//
// # Contexts
//
// locksmith's core owns deadlines: it bounds every call to a node by the
// node timeout and the caller's ctx, running the call on a goroutine of its
// own and waiting for it no longer, whatever the Conn does; the redlock
// Client counts a call that runs on until it returns, and its Close waits
// for it. An adapter passes ctx to its client and nothing more. A Conn
// whose client returns by ctx's deadline whatever it is doing implements
// [DeadlineHonorer], and only then.
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
// Every method should return when ctx is done; the core does not depend on
// it (see Contexts in the package documentation).
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
