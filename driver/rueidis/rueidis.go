// Package rueidis adapts a rueidis client to locksmith's [driver.Conn].
//
// The client settings that matter to locksmith, in rueidis.ClientOption:
//
//   - Dialer.Timeout (5s) and ConnWriteTimeout: keep both inside the node
//     timeout.
//   - Logging: rueidis logs nothing of its own; there is nothing to set.
//   - TLSConfig; Username and Password, or AuthCredentialsFn, for an ACL
//     user, whose rules the README lists.
//
// Build a Conn for each independent node with [Open] (one server) or wrap
// a client with [New] (one server, a Sentinel deployment or a Cluster),
// and hand the Conns to redlock.New; lsrueidis names this package beside
// rueidis itself. Each method passes its ctx to the client's Do and nothing
// more. A call that finds a connection being dialled waits for that dial
// whatever its ctx, so the Conn does not implement
// [driver.DeadlineHonorer]: locksmith bounds every call itself.
//
// A Redis error reply is a *rueidis.RedisError; a missing script's also
// matches [driver.ErrNoScript]. A nil reply is nil, not rueidis.Nil. On a
// cluster client, keys in different hash slots are an error starting with
// CROSSSLOT, as the server's own is. A Conn is safe for concurrent use.
package rueidis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var (
	_ driver.Identifier = (*Conn)(nil)
	_ driver.Notifier   = (*Conn)(nil)
	_ driver.Waiter     = (*Conn)(nil)

	errNoClient = errors.New("rueidis: Conn has no client; make it with New or Open")
)

// Conn is a [driver.Conn] over a rueidis client. Create one with [New] or
// [Open].
type Conn struct {
	client rueidis.Client
	hub    *pubsub.Hub // the pub/sub connection of Subscribe
	id     string      // the NodeID
	owned  bool        // the client is Open's, for Close to close
}

// New returns a Conn that sends its commands through client, which stays
// the caller's to close after the last use of the Conn. New(nil) returns
// nil, which redlock.New reports as a nil Conn.
func New(client rueidis.Client) *Conn {
	if client == nil {
		return nil
	}
	c := &Conn{client: client, id: clientID(client)}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

// Eval runs script with EVAL; see [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.do(ctx, func(b rueidis.Builder) rueidis.Completed {
		return b.Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

// EvalSha runs the script cached under sha1 with EVALSHA; see [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	val, err := c.do(ctx, func(b rueidis.Builder) rueidis.Completed {
		return b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if rerr, ok := rueidis.IsRedisErr(err); ok && rerr.IsNoScript() {
		return nil, driver.MarkNoScript(err)
	}
	return val, err
}

// do builds a command and sends it. ToAny decodes integers as int64,
// strings as string, arrays as []any, and a nil reply as rueidis.Nil.
func (c *Conn) do(ctx context.Context, build func(rueidis.Builder) rueidis.Completed) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	cmd, err := buildCmd(c.client, build)
	if err != nil {
		return nil, err
	}
	val, err := c.client.Do(ctx, cmd).ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	return val, err
}

// buildCmd runs build. An EVAL or EVALSHA builder panics only on a cluster
// client's keys in different hash slots, the caller's mistake.
func buildCmd(client rueidis.Client, build func(rueidis.Builder) rueidis.Completed) (cmd rueidis.Completed, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("CROSSSLOT Keys in request don't hash to the same slot (rueidis: %v)", p)
		}
	}()
	return build(client.B()), nil
}

// ScriptLoad caches script with SCRIPT LOAD, on every node that a cluster
// client knows, and returns the server's digest. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if c == nil || c.client == nil {
		return "", errNoClient
	}
	nodes := map[string]rueidis.Client{c.id: c.client}
	if c.client.Mode() == rueidis.ClientModeCluster {
		nodes = c.client.Nodes() // SCRIPT LOAD has no key to route it by
	}
	digest, err := "", errors.New("rueidis: no node to load the script on")
	for addr, node := range nodes {
		if digest, err = node.Do(ctx, node.B().ScriptLoad().Script(script).Build()).ToString(); err != nil {
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s: %w", addr, err)
		}
	}
	return digest, err // every node reports the script's SHA-1
}

// NodeID implements [driver.Identifier]: [driver.AddrNodeID] of the
// server's address for a client of one server (standalone mode, one node,
// as from [Open]), else the identity of the client value.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return c.id
}

func clientID(client rueidis.Client) string {
	nodes := client.Nodes()
	for addr := range nodes {
		if id, err := driver.AddrNodeID("tcp", addr); err == nil && len(nodes) == 1 && client.Mode() == rueidis.ClientModeStandalone {
			return id
		}
	}
	return driver.ClientNodeID(client)
}

// Subscribe implements [driver.Notifier] over one dedicated connection
// (Client.Dedicate), held while any subscription lasts.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

// Wait implements [driver.Waiter] with [pubsub.Hub.Wait].
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx) // a nil Hub, of a Conn New did not make, returns nil
}

func (c *Conn) dialPubSub(context.Context) (pubsub.Conn, error) {
	dc, release := c.client.Dedicate()
	ended := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) { c.hub.Message(m.Channel, m.Message) },
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				c.hub.Confirmed(s.Channel)
			}
		},
	})
	send := func(ctx context.Context, subscribe bool, channels []string) error {
		if subscribe {
			return dc.Do(ctx, dc.B().Subscribe().Channel(channels...).Build()).Error()
		}
		return dc.Do(ctx, dc.B().Unsubscribe().Channel(channels...).Build()).Error()
	}
	return pubsub.Hooked{Send: send, Ended: ended, Release: release}, nil
}
