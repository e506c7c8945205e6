// Package redigo adapts a redigo connection pool to locksmith's
// [driver.Conn].
//
// Wrap the pool of each independent Redis node with [New] and hand the Conns
// to redlock.New:
//
//	nodes := make([]driver.Conn, 0, len(addrs))
//	for _, addr := range addrs {
//		pool := &redis.Pool{
//			DialContext: func(ctx context.Context) (redis.Conn, error) {
//				return redis.DialContext(ctx, "tcp", addr)
//			},
//			MaxIdle: 8,
//		}
//		defer pool.Close()
//		nodes = append(nodes, redigo.New(pool))
//	}
//	locker, err := redlock.New(nodes)
//
// # Context
//
// Each call takes a connection from the pool with Pool.GetContext and runs
// its command with redis.DoContext, so ctx bounds the wait for a pooled
// connection, the command and its reply. When ctx ends during a command,
// redigo closes that connection rather than return it to the pool. Dialing a
// new connection honours ctx only when the pool has a DialContext function;
// a pool with only Dial dials without it.
//
// redis.DoContext runs the command in a goroutine of its own so that it can
// return when ctx ends. The adapter does not skip it for a context that only
// its deadline can end, as the go-redis adapter does: redigo's calls without
// a context bound the write by a timeout only when the connection was dialled
// with one, which a Conn cannot see.
//
// # Errors
//
// A Redis error reply is returned as a redis.Error. [Conn.EvalSha] reports a
// missing script with an error that matches both [driver.ErrNoScript] and
// the server's redis.Error. An error caused by the end of ctx matches
// ctx.Err().
//
// # Concurrency
//
// A Conn is safe for concurrent use: every call has a pooled connection to
// itself.
package redigo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/adapt"
)

var (
	_ driver.Conn       = (*Conn)(nil)
	_ driver.Identifier = (*Conn)(nil)
	_ driver.Notifier   = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts on connections from a redigo
// pool. Create one with [New].
type Conn struct {
	pool *redis.Pool
	hub  *adapt.Hub // the pub/sub connection of Subscribe
}

// New returns a Conn that takes a connection from pool for each call and
// returns it afterwards. The pool remains the caller's: closing it is the
// caller's job, after the last use of the Conn.
//
// New(nil) returns nil, which redlock.New reports as a nil Conn.
func New(pool *redis.Pool) *Conn {
	if pool == nil {
		return nil
	}
	c := &Conn{pool: pool}
	c.hub = adapt.NewHub(c.dialPubSub)
	return c
}

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVAL", scriptArgs(script, keys, args)...)
	if err != nil {
		return nil, err
	}
	return normalize(reply), nil
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVALSHA", scriptArgs(sha1, keys, args)...)
	if err != nil {
		if isNoScript(err) {
			return nil, adapt.NoScript(err)
		}
		return nil, err
	}
	return normalize(reply), nil
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return redis.String(c.do(ctx, "SCRIPT", "LOAD", script))
}

// NodeID identifies the node behind the Conn for [driver.Identifier] by the
// identity of the pool: a pool's Dial function can reach any server, so two
// Conns share an ID exactly when they wrap the same pool.
func (c *Conn) NodeID() string {
	return fmt.Sprintf("%T@%p", c.pool, c.pool)
}

// do runs one command on a connection of its own from the pool.
func (c *Conn) do(ctx context.Context, command string, args ...any) (any, error) {
	// redigo only notices a ctx that is already done while it waits, so
	// without this check a call could still go out.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, adapt.ContextErr(ctx, err)
	}
	// Close hands the connection back to the pool, or discards it after
	// a failure. Its error concerns only that connection, and the reply
	// is already in hand.
	defer conn.Close()
	reply, err := redis.DoContext(conn, ctx, command, args...)
	return reply, adapt.ContextErr(ctx, err)
}

// scriptArgs lays out the arguments of EVAL and EVALSHA: the script or its
// digest, the number of keys, the keys and the args.
func scriptArgs(scriptOrDigest string, keys, args []string) []any {
	out := make([]any, 0, 2+len(keys)+len(args))
	out = append(out, scriptOrDigest, len(keys))
	for _, key := range keys {
		out = append(out, key)
	}
	for _, arg := range args {
		out = append(out, arg)
	}
	return out
}

// normalize converts a redigo reply to the types of the driver contract.
// redigo returns bulk strings as []byte (status replies are already
// strings, integers int64, arrays []any and nil replies nil); the bytes
// are copied into strings, so the reply shares no memory with redigo.
func normalize(reply any) any {
	switch reply := reply.(type) {
	case []byte:
		return string(reply)
	case []any:
		for i, element := range reply {
			reply[i] = normalize(element)
		}
		return reply
	default:
		return reply
	}
}

// isNoScript reports whether err is the server's NOSCRIPT error reply.
// redigo has no check of its own for it, so this reads the error code that
// Redis puts first in the reply.
func isNoScript(err error) bool {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		return false
	}
	code, _, _ := strings.Cut(string(redisErr), " ")
	return code == "NOSCRIPT"
}
