// Package redigo adapts a redigo pool to locksmith's [driver.Conn].
//
// The pool settings that matter to locksmith:
//
//   - DialContext (not Dial) calling redis.DialContext, and
//     TestOnBorrowContext (not TestOnBorrow), so that ctx bounds the dial
//     and the check of a pooled connection.
//   - redis.DialConnectTimeout, redis.DialReadTimeout,
//     redis.DialTLSHandshakeTimeout: keep them inside the node timeout, or
//     the error of a call names no cause.
//   - Logging: redigo logs nothing unless Dial wraps its connections in
//     redis.NewLoggingConn.
//   - redis.DialUseTLS and redis.DialTLSConfig; redis.DialUsername and
//     redis.DialPassword for an ACL user, whose rules the README lists
//     (+info for [Conn.ServerID]).
//
// Wrap the pool of each independent node with [New] and hand the Conns to
// redlock.New. A Redis error reply is a redis.Error.
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
	_ driver.Identifier       = (*Conn)(nil)
	_ driver.Notifier         = (*Conn)(nil)
	_ driver.ServerIdentifier = (*Conn)(nil)
	_ driver.Waiter           = (*Conn)(nil)

	errNoPool = errors.New("redigo: Conn has no pool; make it with New")
)

// Conn is a [driver.Conn] over a redigo pool. Create one with [New]. It is
// no [driver.DeadlineHonorer]: Dial, TestOnBorrow and TLS take no ctx.
type Conn struct {
	pool     *redis.Pool
	hub      *pubsub.Hub            // the pub/sub connection of Subscribe
	serverID atomic.Pointer[string] // see ServerID; nil until known
}

// New returns a Conn that takes a connection from pool for each call. The
// pool stays the caller's to close, after the last use of the Conn.
// New(nil) returns nil, which redlock.New reports as a nil Conn.
func New(pool *redis.Pool) *Conn {
	if pool == nil {
		return nil
	}
	c := &Conn{pool: pool}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

// Eval runs script with EVAL; see [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVAL", scriptArgs(script, keys, args)...)
	return normalize(reply), err
}

// EvalSha runs the script cached under sha1 with EVALSHA; see [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, "EVALSHA", scriptArgs(sha1, keys, args)...)
	if errorCode(err) == "NOSCRIPT" {
		return nil, driver.MarkNoScript(err) // redigo has no typed check
	}
	return normalize(reply), err
}

// ScriptLoad caches script with SCRIPT LOAD; see [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return redis.String(c.do(ctx, "SCRIPT", "LOAD", script))
}

// NodeID implements [driver.Identifier] by the pool's identity, since its
// Dial can reach any server; [Conn.ServerID] tells pools of one server apart.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return driver.ClientNodeID(c.pool)
}

// ServerID implements [driver.ServerIdentifier]: the run_id of INFO
// server, asked after each call the server answers until a reply settles it.
func (c *Conn) ServerID() (id string, known bool) {
	if c == nil || c.serverID.Load() == nil {
		return "", false
	}
	return *c.serverID.Load(), true // set once, never unset
}

// Wait implements [driver.Waiter] with [pubsub.Hub.Wait].
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx)
}

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
	if c.serverID.Load() == nil && (err == nil || errorCode(err) != "") {
		c.learnServerID(ctx, conn)
	}
	return reply, err
}

// learnServerID asks the server behind conn, which has just answered, for
// its run_id. A failure of the connection, the end of ctx and the error
// replies of a passing state (BUSY, LOADING) leave it to a later call.
func (c *Conn) learnServerID(ctx context.Context, conn redis.Conn) {
	reply, err := redis.DoContext(conn, ctx, "INFO", "server")
	if code := errorCode(err); err != nil && (code == "" || code == "BUSY" || code == "LOADING") {
		return
	}
	info, _ := reply.([]byte) // nil for an error reply: no ID
	id := driver.RunID(string(info))
	c.serverID.CompareAndSwap(nil, &id)
}

// scriptArgs lays out the arguments of EVAL and EVALSHA (AddFlat reflects).
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

// normalize copies the bulk strings of a reply, which redigo returns as
// []byte, into strings; the other types are already the driver contract's.
func normalize(reply any) any {
	switch reply := reply.(type) {
	case []byte:
		return string(reply)
	case []any:
		for i, element := range reply {
			reply[i] = normalize(element)
		}
	}
	return reply
}

// errorCode returns the code that Redis puts first in an error reply, or
// "" when err is no error reply.
func errorCode(err error) string {
	redisErr, ok := errors.AsType[redis.Error](err)
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(string(redisErr), " ")
	return code
}

// Subscribe implements [driver.Notifier] over one connection of the pool,
// held while any subscription lasts (it counts against MaxActive). In place
// of the pool's read timeout, as a channel may stay quiet for long, it gets
// a PING every second and counts as broken after readWait of silence.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil {
		return nil, errNoPool
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

const readWait = 3 * pubsub.PingInterval

func (c *Conn) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return pubSub{redis.PubSubConn{Conn: conn}}, nil
}

// pubSub is a redis.PubSubConn as a [pubsub.Hub] drives it; redigo allows
// one writer beside one reader, and the Hub serializes the writes.
type pubSub struct{ psc redis.PubSubConn }

func (p pubSub) Subscribe(_ context.Context, channels ...string) error {
	return p.psc.Subscribe(redis.Args{}.AddFlat(channels)...)
}

func (p pubSub) Unsubscribe(_ context.Context, channels ...string) error {
	return p.psc.Unsubscribe(redis.Args{}.AddFlat(channels)...)
}

func (p pubSub) Ping(context.Context) error { return p.psc.Ping("") }

func (p pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	for {
		switch msg := p.psc.ReceiveWithTimeout(readWait).(type) {
		case redis.Subscription:
			if msg.Kind == "subscribe" {
				hub.Confirmed(msg.Channel)
			}
		case redis.Message:
			hub.Message(msg.Channel, string(msg.Data))
		case redis.Error:
			hub.Refused(msg) // an error reply: the connection is fine
		case error:
			if ctx.Err() != nil {
				return nil
			}
			return msg
		case redis.Pong:
			if ctx.Err() != nil {
				return nil // the Hub's last PING woke the read
			}
		}
	}
}

// Close has redigo close the socket (a receive with a done ctx does), so
// that the pool does not wait for a stopped server to confirm UNSUBSCRIBE.
func (p pubSub) Close() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	for err == nil {
		_, err = redis.ReceiveContext(p.psc.Conn, done)
	}
	p.psc.Close()
}
