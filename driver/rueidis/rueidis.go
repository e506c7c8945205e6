// Package rueidis adapts a rueidis client to locksmith's [driver.Conn].
//
// Build a Conn for each independent Redis node with [Open] and hand the
// Conns to redlock.New:
//
//	nodes := make([]driver.Conn, 0, len(addrs))
//	for _, addr := range addrs {
//		conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{addr}})
//		if err != nil {
//			return err
//		}
//		defer conn.Close()
//		nodes = append(nodes, conn)
//	}
//	locker, err := redlock.New(nodes)
//
// (lsrueidis names this package, imported beside rueidis itself.) The
// client settings that matter to locksmith (rueidis.ClientOption):
//
//   - Dialer.Timeout (5s by default) and ConnWriteTimeout: keep them
//     inside locksmith's node timeout; a call that finds its connection
//     being dialled again waits for that dial, whatever its ctx, which is
//     why the Conn does not implement [driver.DeadlineHonorer].
//   - Logging: rueidis logs nothing of its own.
//   - TLSConfig for TLS; Username and Password (or AuthCredentialsFn)
//     for an ACL user, whose rules the README lists.
//
// rueidis.NewClient fails when its node is down; [Open] does not, so a
// program starts while a minority of its nodes is down. [New] wraps a
// client the caller built: a single server, a Sentinel deployment or a
// Cluster, each of which then counts as one Redlock node.
//
// A Redis error reply is returned as a *rueidis.RedisError. On a cluster
// client, keys in different hash slots are an error whose text starts with
// CROSSSLOT, as the server's own error does.
package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var (
	_ driver.Conn       = (*Conn)(nil)
	_ driver.Identifier = (*Conn)(nil)
	_ driver.Notifier   = (*Conn)(nil)
	_ driver.Waiter     = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts through a rueidis client. Create
// one with [New] or [Open].
type Conn struct {
	client rueidis.Client
	owned  bool        // the client is Open's, for Close to close
	hub    *pubsub.Hub // the pub/sub connection of Subscribe
}

// New returns a Conn that sends its commands through client. The client
// remains the caller's: closing it is the caller's job, after the last use
// of the Conn.
//
// New(nil) returns nil, which redlock.New reports as a nil Conn.
func New(client rueidis.Client) *Conn {
	if client == nil {
		return nil
	}
	c := &Conn{client: client}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

// Wait implements [driver.Waiter]: it returns once Subscribe's dedicated
// connection is given back and the Hub's goroutine has ended, or with
// ctx.Err(). The redlock Client's Close calls it.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx)
}

// errNoClient is the error of a Conn that neither New nor Open made.
var errNoClient = errors.New("rueidis: Conn has no client; make it with New or Open")

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.do(ctx, func(b rueidis.Builder) rueidis.Completed {
		return b.Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	val, err := c.do(ctx, func(b rueidis.Builder) rueidis.Completed {
		return b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if redisErr, ok := rueidis.IsRedisErr(err); ok && redisErr.IsNoScript() {
		return nil, driver.MarkNoScript(err)
	}
	return val, err
}

// do builds a command with the client's builder and sends it.
func (c *Conn) do(ctx context.Context, builder func(rueidis.Builder) rueidis.Completed) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	cmd, err := build(func() rueidis.Completed { return builder(c.client.B()) })
	if err != nil {
		return nil, err
	}
	return reply(c.client.Do(ctx, cmd))
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. A cluster client loads it on every node it knows, so that
// EVALSHA succeeds wherever the keys lead. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if c == nil || c.client == nil {
		return "", errNoClient
	}
	if c.client.Mode() != rueidis.ClientModeCluster {
		return loadOn(ctx, c.client, script)
	}
	// SCRIPT LOAD has no key, so the cluster client would send it to just
	// one node.
	var digest string
	for addr, node := range c.client.Nodes() {
		d, err := loadOn(ctx, node, script)
		switch {
		case err != nil:
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s: %w", addr, err)
		case digest != "" && d != digest:
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s reported digest %q, another node %q", addr, d, digest)
		}
		digest = d
	}
	if digest == "" {
		return "", errors.New("rueidis: the cluster client knows no nodes to load the script on")
	}
	return digest, nil
}

func loadOn(ctx context.Context, client rueidis.Client, script string) (string, error) {
	return client.Do(ctx, client.B().ScriptLoad().Script(script).Build()).ToString()
}

// NodeID implements [driver.Identifier]. For a client of one server
// (rueidis's standalone mode with a single node, as from [Open]) it is
// [driver.AddrNodeID] of that server's address, so "localhost:6379" and
// "127.0.0.1:6379" are one node, and so are a rueidis and a go-redis
// client of one server. For a cluster or Sentinel client it is the
// identity of the client value: only the same client wrapped twice shares
// it.
func (c *Conn) NodeID() string {
	if c == nil || c.client == nil {
		return "" // redlock.New refuses a Conn that New did not make
	}
	if nodes := c.client.Nodes(); c.client.Mode() == rueidis.ClientModeStandalone && len(nodes) == 1 {
		for addr := range nodes {
			if id, err := driver.AddrNodeID("tcp", addr); err == nil {
				return id
			}
		}
	}
	return driver.ClientNodeID(c.client)
}

// errCrossSlot reports keys in different hash slots on a cluster client. It
// starts with the error code of the server's own error for this case, so
// that a caller who recognizes that error recognizes this one too.
var errCrossSlot = errors.New("CROSSSLOT Keys in request don't hash to the same slot (refused by the rueidis client)")

// build runs a command builder and turns its panic into an error. The
// builder of a cluster client panics, with a text that names "different
// key slots", when keys fall in different hash slots: the caller's mistake
// to be reported, not a crash.
func build(builder func() rueidis.Completed) (cmd rueidis.Completed, err error) {
	defer func() {
		if p := recover(); p != nil {
			if text, ok := p.(string); ok && strings.Contains(text, "different key slots") {
				err = errCrossSlot
				return
			}
			err = fmt.Errorf("rueidis: cannot build the command: %v", p)
		}
	}()
	return builder(), nil
}

// reply converts a result to the types of the driver contract. rueidis
// decodes integers as int64, bulk and status strings as string, arrays as
// []any with nil elements, and reports a nil reply as rueidis.Nil.
func reply(result rueidis.RedisResult) (any, error) {
	val, err := result.ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return val, nil
}
