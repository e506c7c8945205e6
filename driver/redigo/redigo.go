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
// Every method returns as soon as its ctx is done, whatever the pool's Dial,
// TestOnBorrow or timeouts. A call takes a connection from the pool with
// Pool.GetContext and runs its command with redis.DoContext. redigo honours
// ctx while it waits for a pooled connection, while it runs the command and
// in a DialContext function that passes ctx on, but not in a Dial function,
// which takes no ctx, nor in TestOnBorrow, whose check runs without one, nor
// in redis.DialContext's TLS handshake, which only DialTLSHandshakeTimeout
// bounds: against a node that stalls (a black hole, a server stopped with
// SIGSTOP) any of them can block for as long as the connection's own
// timeouts allow. So a call whose ctx can end runs in a goroutine of its
// own, and when ctx ends first the method returns ctx.Err() at once. That
// holds for a call whose ctx only its deadline ends, as redlock makes for a
// round on one node, too, when the pool would have to lend it a
// connection: the pool may dial for it.
//
// The calls of a redlock round on several nodes are the exception: the
// round runs each on a goroutine of the redlock Client's that it stops
// waiting for at the deadline, so the call runs the pool and the command
// on that goroutine (see adapter.Run), and may return after its ctx ended,
// when the pool and the connection end it (below). Those calls, and any
// other whose ctx only its deadline ends, send a command of at most 4 KiB
// of arguments with redis.DoWithTimeout, with the time left until the
// deadline as its read timeout in place of the connection's own, rather
// than with redis.DoContext, which starts a goroutine per command: written
// on a connection whose earlier replies have all been read, such a command
// fits in the socket's send buffer, and the read timeout ends the wait for
// its reply at the deadline. A connection from a Dial that is no
// redis.ConnWithTimeout is sent every command with redis.DoContext.
//
// A call whose ctx only its deadline ends does not need the pool when the
// Conn has a connection in hand. After a call whose command got an answer,
// the Conn keeps its connection out of the pool for its next call, and
// such a call with a command of at most 4 KiB runs it on that connection
// on the calling goroutine, bounded by the deadline as above, rather than
// on a goroutine of its own. The other calls take that connection too,
// when it is there, before they ask the pool. The Conn keeps one
// connection at most, and hands it back to the pool after 1s without a
// call, after a call whose command got no answer on it, and after any
// call once 1s has passed since the pool lent it or while the pool has as
// many connections open as its MaxActive allows. A connection kept is in
// use as far as the pool can tell: it counts towards MaxActive, and
// TestOnBorrow, IdleTimeout and MaxConnLifetime do not look at it until it
// is back, within about 2s of when the pool lent it.
//
// # What may outlive a call
//
// A call that returned early leaves its goroutine behind until the pool
// hands it a connection or fails to (while a node stalls, each call to it
// adds one). The goroutine then sends nothing, since its caller is gone,
// and gives the connection back. How long that takes is up to the pool:
//
//   - Dial or DialContext: until the dial ends, which for redis.Dial is the
//     connect timeout (redis.DialConnectTimeout, 30s by default) plus, for
//     a dial that sends AUTH, SELECT or CLIENT SETNAME, the read timeout
//     (redis.DialReadTimeout, none by default), and for a TLS connection,
//     of redis.Dial or redis.DialContext, the handshake timeout
//     (redis.DialTLSHandshakeTimeout, 10s by default).
//   - TestOnBorrow: until the check's command is answered or fails, which
//     for a connection without a read timeout is until the server answers
//     again or the connection breaks. TestOnBorrowContext, given a check
//     that runs its command with redis.DoContext, ends with ctx instead.
//   - A command already sent when ctx ended: redis.DoContext closes the
//     connection, which ends the read at once; a command sent with
//     redis.DoWithTimeout (above) reads until the deadline.
//
// A call of a redlock round on several nodes that goes on past its ctx holds
// the redlock Client's goroutine for as long, which the Client's Wait stops
// waiting for a per-node timeout after the deadline. So give pools that may
// reach a stalled node a DialContext that passes ctx on (or a connect
// timeout), a read timeout, and TestOnBorrowContext rather than
// TestOnBorrow. [Conn.Wait] waits for every call still running, those left
// behind and those on the redlock Client's goroutines included (on a
// connection the Conn kept or not), and then gives back the connection the
// Conn keeps: call it before closing the pool, or in a test that checks
// for leaked goroutines. Otherwise that connection goes back within 1s of
// the Conn's last call, by a timer; it runs no goroutine while kept.
//
// Subscribe's shared pub/sub connection and its two goroutines (one reads,
// one sends the heartbeat PING) live while some subscription lasts. After
// the last cancel they end within a round trip to the server, or within 3s
// when it does not answer. A cancel that ends a channel's last subscription
// writes UNSUBSCRIBE before it returns, bounded by the connection's write
// timeout.
//
// # Start-up with nodes down
//
// A redis.Pool dials when a call first needs a connection, so a locker
// built while a minority of its nodes is down starts, counts those nodes as
// failed while they are down, and uses them once they are up.
//
// # Node identity
//
// A pool does not tell which server its Dial reaches, so [Conn.NodeID] is
// the pool's identity, and two pools to one server pass redlock.New. The
// server tells instead: the first call that a server answers asks it, on
// the same connection and within the same ctx, for its run_id (INFO
// server), and later calls ask again until the answer settles it (a
// busy server or a broken connection does not), and [Conn.ServerID]
// reports it. A lock attempt or Resume whose round finds two pools
// reporting one server fails with an error matching
// redlock.ErrInvalidArgument: the first one, since until a pool's ID is
// known, a Client's acquire rounds wait for its reply rather than return
// at a quorum. That costs the first call one more round trip. A server
// that refuses INFO (an ACL user without +info) or reports no run_id
// turns the check off for its pools. Give each server one pool.
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
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
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
	pool       *redis.Pool
	hub        *adapter.Hub           // the pub/sub connection of Subscribe
	background adapter.Background     // the goroutines of calls whose ctx can end
	serverID   atomic.Pointer[string] // see ServerID; nil until settled
	// spare is the connection of the last call, kept out of the pool
	// for the next: see the package documentation.
	spare *adapter.Spare[pooled]
}

// pooled is a connection from the pool and when the pool lent it.
type pooled struct {
	conn redis.Conn
	lent time.Time
}

// keepSpare is how long a Conn keeps the connection of its last call out
// of the pool for its next call, and how long after the pool lent it a
// connection goes back to the pool after its call, used or not.
const keepSpare = time.Second

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
	c.hub = adapter.NewHub(c.dialPubSub)
	// NewSpare fails only for a keep time that is not positive or a nil
	// release function.
	c.spare, _ = adapter.NewSpare(keepSpare, func(p pooled) { closeConn(p.conn) })
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
			return nil, adapter.NoScript(err)
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
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return fmt.Sprintf("%T@%p", c.pool, c.pool)
}

// do runs one command on a connection of its own, and returns as soon as
// ctx is done: see the package documentation. A call whose command send
// runs on the calling goroutine (a ctx that only its deadline ends, and a
// small command) does so on the Conn's spare connection when there is one,
// which needs no pool; any other call goes through adapter.Run.
func (c *Conn) do(ctx context.Context, command string, args ...any) (any, error) {
	if c == nil || c.pool == nil {
		return nil, errNoPool
	}
	if adapter.Inline(ctx) && argsSize(args) <= smallCommand {
		// Counted, as Run counts a call it makes on the calling
		// goroutine: that may be one of redlock's that no caller waits
		// for past the deadline. Counted before it takes the
		// connection, so that a Wait that finds none kept waits for it.
		c.background.Begin()
		if p, ok := c.spare.Take(); ok {
			defer c.background.End()
			return c.runOn(ctx, p, command, args)
		}
		c.background.End()
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (any, error) {
		return c.run(ctx, command, args)
	})
}

// errNoPool is the error of a Conn that New did not make.
var errNoPool = errors.New("redigo: Conn has no pool; make it with New")

// smallCommand is the size, in bytes of arguments, up to which a command
// written on a connection whose earlier replies have all been read fits in
// its socket's send buffer, which Linux starts at 16 KiB for a TCP socket
// (net.ipv4.tcp_wmem), so that writing it does not wait for the server.
const smallCommand = 4096

// send runs command on conn and returns its reply. A ctx that only its
// deadline ends (adapter.Inline), as locksmith gives the calls of its
// rounds, ends the command at the same time as a read timeout at that
// deadline does, so a small command is sent with redis.DoWithTimeout on the
// calling goroutine, with that read timeout in place of the connection's
// own; redis.DoContext runs the command on a goroutine of its own, so that
// it can close the connection when ctx ends, which only a write that waits
// for the server needs. Any other command, and any command on a connection
// from a Dial that returns no redis.ConnWithTimeout, goes through
// redis.DoContext.
func send(ctx context.Context, conn redis.Conn, command string, args []any) (any, error) {
	if deadline, ok := ctx.Deadline(); ok && adapter.Inline(ctx) && argsSize(args) <= smallCommand {
		timeout := time.Until(deadline)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		reply, err := redis.DoWithTimeout(conn, timeout, command, args...)
		if err != errNoTimeout {
			return reply, err
		}
	}
	return redis.DoContext(conn, ctx, command, args...)
}

// errNoTimeout is the error, sent before any I/O, of redis.DoWithTimeout
// on a connection that is no redis.ConnWithTimeout; redigo keeps it
// unexported, so it is taken from such a call.
var errNoTimeout = func() error {
	_, err := redis.DoWithTimeout(withoutTimeout{}, 0, "")
	return err
}()

// withoutTimeout is a redis.Conn that is no redis.ConnWithTimeout.
type withoutTimeout struct{ redis.Conn }

// argsSize is the size of the string arguments in args, and a generous
// guess for any other.
func argsSize(args []any) int {
	n := 0
	for _, arg := range args {
		switch arg := arg.(type) {
		case string:
			n += len(arg)
		case []byte:
			n += len(arg)
		default:
			n += 32
		}
	}
	return n
}

// run takes the connection the Conn keeps, or else one from the pool, and
// runs one command on it. The pool's Dial and TestOnBorrow may not look at
// ctx, so run may return long after ctx ended; it then sends nothing.
func (c *Conn) run(ctx context.Context, command string, args []any) (any, error) {
	p, ok := c.spare.Take()
	if !ok {
		conn, err := c.pool.GetContext(ctx)
		if err != nil {
			return nil, adapter.ContextErr(ctx, err)
		}
		p = pooled{conn, time.Now()}
	}
	if err := ctx.Err(); err != nil {
		// The caller gave up while the pool dialled or checked the
		// connection: a lock request no one waits for must not go out.
		closeConn(p.conn)
		return nil, err
	}
	return c.runOn(ctx, p, command, args)
}

// runOn runs one command on p's connection, which is the caller's, and then
// keeps it as the Conn's spare, or hands it back to the pool, which
// discards it when it failed.
func (c *Conn) runOn(ctx context.Context, p pooled, command string, args []any) (any, error) {
	reply, err := send(ctx, p.conn, command, args)
	if c.serverID.Load() == nil && answered(err) {
		c.learnServerID(ctx, p.conn)
	}
	if !c.keeps(p, err) || !c.spare.Put(p) {
		closeConn(p.conn)
	}
	return reply, adapter.ContextErr(ctx, err)
}

// keeps reports whether p's connection, whose command ended with err, may
// be kept for the next call. A connection goes on being used only after an
// answer, since one whose command failed otherwise may hold the rest of a
// reply, or none; and it goes back to the pool once the pool lent it
// keepSpare ago, so that the pool's health check, idle timeout and maximum
// age see it again, and while the pool has as many connections open as its
// MaxActive allows, so that its other users can have it.
func (c *Conn) keeps(p pooled, err error) bool {
	if !answered(err) || p.conn.Err() != nil || time.Since(p.lent) >= keepSpare {
		return false
	}
	return c.pool.MaxActive <= 0 || c.pool.Stats().ActiveCount < c.pool.MaxActive
}

// closeConn hands conn back to the pool, or has the pool discard it when it
// failed. Its error concerns only that connection, and any reply is
// already in hand.
func closeConn(conn redis.Conn) { _ = conn.Close() }

// Wait implements [driver.Waiter]: it blocks until every call of the Conn
// has finished, including those that returned early because their ctx
// ended while the pool was still dialling or checking a connection, and
// returns nil; or it returns ctx.Err() when ctx ends first. See the package
// documentation for how long such a call may go on. Then it hands the
// connection the Conn keeps for its next call back to the pool. Wait
// serves a program that wants to close the pool only once nothing uses it,
// and tests that check for leaked goroutines. It does not wait for
// Subscribe's connection.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil // New(nil) returns nil, and nil runs no calls
	}
	err := c.background.Wait(ctx)
	c.spare.Release()
	return err
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
// redigo has no check of its own for it, so this reads the error code.
func isNoScript(err error) bool { return errorCode(err) == "NOSCRIPT" }

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
