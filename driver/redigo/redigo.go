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
//				return redis.DialContext(ctx, "tcp", addr, redis.DialReadTimeout(time.Second))
//			},
//			MaxIdle: 8,
//		}
//		defer pool.Close()
//		nodes = append(nodes, redigo.New(pool))
//	}
//	locker, err := redlock.New(nodes)
//
// The pool settings that matter to locksmith:
//
//   - DialContext (not Dial) calling redis.DialContext, and
//     TestOnBorrowContext (not TestOnBorrow): redigo then honours ctx while
//     it dials and checks a connection; redigo does not retry dials. The
//     Conn does not implement [driver.DeadlineHonorer], since a pool may
//     have Dial or TestOnBorrow, and a TLS handshake takes no ctx.
//   - redis.DialConnectTimeout, redis.DialReadTimeout: keep them inside
//     locksmith's node timeout, or a call goes on after locksmith stopped
//     waiting for it, and the error names no cause.
//   - Logging: redigo logs nothing unless a Dial wraps its connections
//     in redis.NewLoggingConn.
//   - redis.DialUseTLS, redis.DialTLSConfig and
//     redis.DialTLSHandshakeTimeout (which alone bounds the handshake)
//     for TLS; redis.DialUsername and redis.DialPassword for an ACL user,
//     whose rules the README lists (+info for [Conn.ServerID]).
//
// Each call runs on a connection of its own from the pool. A Redis error
// reply is returned as a redis.Error.
package redigo

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var (
	_ driver.Conn             = (*Conn)(nil)
	_ driver.Identifier       = (*Conn)(nil)
	_ driver.Notifier         = (*Conn)(nil)
	_ driver.ServerIdentifier = (*Conn)(nil)
	_ driver.Waiter           = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts on connections from a redigo
// pool. Create one with [New].
type Conn struct {
	pool     *redis.Pool
	hub      *pubsub.Hub            // the pub/sub connection of Subscribe
	serverID atomic.Pointer[string] // see ServerID; nil until settled
}

// New returns a Conn that takes a connection from pool for each call and
// gives it back afterwards. The pool stays the caller's to close, after
// the last use of the Conn.
//
// New(nil) returns nil, which redlock.New reports as a nil Conn.
func New(pool *redis.Pool) *Conn {
	if pool == nil {
		return nil
	}
	c := &Conn{pool: pool}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVAL", scriptArgs(script, keys, args)...)
	return normalize(reply), err
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVALSHA", scriptArgs(sha1, keys, args)...)
	if errorCode(err) == "NOSCRIPT" {
		// redigo has no typed check for it: the error code is the
		// first word of the reply, as Redis defines.
		return nil, driver.MarkNoScript(err)
	}
	return normalize(reply), err
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return redis.String(c.do(ctx, "SCRIPT", "LOAD", script))
}

// NodeID implements [driver.Identifier] by the identity of the pool: a
// pool's Dial can reach any server, so two Conns share an ID exactly when
// they wrap the same pool. [Conn.ServerID] tells pools of one server apart.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return driver.ClientNodeID(c.pool)
}

// Wait implements [driver.Waiter]: it returns once Subscribe's pub/sub
// connection is back in the pool and its goroutines have ended, or with
// ctx.Err(). The redlock Client's Close calls it.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx)
}

// errNoPool is the error of a Conn that New did not make.
var errNoPool = errors.New("redigo: Conn has no pool; make it with New")

// do runs one command on a connection of its own from the pool.
func (c *Conn) do(ctx context.Context, command string, args ...any) (any, error) {
	if c == nil || c.pool == nil {
		return nil, errNoPool
	}
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close() // back to the pool, or discarded when it failed
	if err := ctx.Err(); err != nil {
		// The caller gave up while the pool dialled or checked the
		// connection: a lock request no one waits for must not go out.
		return nil, err
	}
	reply, err := redis.DoContext(conn, ctx, command, args...)
	if c.serverID.Load() == nil && (err == nil || isRedisError(err)) {
		c.learnServerID(ctx, conn)
	}
	return reply, err
}

// scriptArgs lays out the arguments of EVAL and EVALSHA: the script or its
// digest, the number of keys, the keys and the args.
func scriptArgs(scriptOrDigest string, keys, args []string) redis.Args {
	out := make(redis.Args, 0, 2+len(keys)+len(args))
	return out.Add(scriptOrDigest, len(keys)).AddFlat(keys).AddFlat(args)
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

func isRedisError(err error) bool {
	var redisErr redis.Error
	return errors.As(err, &redisErr)
}

// errorCode returns the code that Redis puts first in an error reply, or
// "" when err is no error reply.
func errorCode(err error) string {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		return ""
	}
	code, _, _ := strings.Cut(string(redisErr), " ")
	return code
}
