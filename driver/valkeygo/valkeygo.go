// Package valkeygo adapts a valkey-go client to locksmith's [driver.Conn].
//
// The client settings that matter to locksmith, in valkey.ClientOption:
//
//   - Dialer.Timeout (5s) and ConnWriteTimeout: keep both inside the node timeout.
//   - Logging: valkey-go logs nothing of its own; there is nothing to set.
//   - TLSConfig: the TLS settings, for a server that takes TLS.
//   - Username and Password, or AuthCredentialsFn: an ACL user (README lists its rules).
//   - ForceSingleClient: for one server; NewClient then returns a client (and the error) while it is down.
//
// Wrap each node's client (one server, a Sentinel deployment or a Cluster)
// with [New] and hand the Conns to redlock.New. Each method passes its ctx
// to the client's Do and nothing more. A call that finds a connection being
// dialled waits for that dial whatever its ctx, so the Conn does not
// implement [driver.DeadlineHonorer]: locksmith bounds every call itself.
//
// A Redis error reply is a *valkey.ValkeyError; a missing script's also
// matches [driver.ErrNoScript]. A nil reply is nil, not valkey.Nil. On a
// cluster client, keys in different hash slots are an error starting with
// CROSSSLOT, as the server's own is. A Conn is safe for concurrent use.
package valkeygo

import (
	"context"
	"errors"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var _ driver.Identifier = (*Conn)(nil)
var _ driver.Notifier = (*Conn)(nil)
var _ driver.Waiter = (*Conn)(nil)

// Conn is a [driver.Conn] over a valkey-go client. Create one with [New].
type Conn struct {
	client valkey.Client
	hub    *pubsub.Hub // the pub/sub connection of Subscribe
	id     string      // the NodeID
}

// New returns a Conn that sends its commands through client, which stays
// the caller's to close after the last use of the Conn. New(nil) returns
// nil, which redlock.New reports as a nil Conn.
func New(client valkey.Client) *Conn {
	if client == nil {
		return nil
	}
	c := &Conn{client: client, id: clientID(client)}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

var errNoClient = errors.New("valkeygo: Conn has no client; make it with New")

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

// EvalSha runs the script cached under sha1 with EVALSHA; a missing
// script's error matches [driver.ErrNoScript]. See [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	val, err := c.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if verr, ok := valkey.IsValkeyErr(err); ok && verr.IsNoScript() {
		return nil, driver.MarkNoScript(err)
	}
	return val, err
}

// do builds a command and sends it. ToAny decodes integers as int64,
// strings as string, arrays as []any, and a nil reply as valkey.Nil.
func (c *Conn) do(ctx context.Context, build func(valkey.Builder) valkey.Completed) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	cmd, err := buildCmd(c.client, build)
	if err != nil {
		return nil, err
	}
	val, err := c.client.Do(ctx, cmd).ToAny()
	if valkey.IsValkeyNil(err) {
		return nil, nil
	}
	return val, err
}

// buildCmd runs build. An EVAL or EVALSHA builder panics only on a cluster
// client's keys in different hash slots, the caller's mistake.
func buildCmd(client valkey.Client, build func(valkey.Builder) valkey.Completed) (cmd valkey.Completed, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("CROSSSLOT Keys in request don't hash to the same slot (valkey-go: %v)", p)
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
	nodes := map[string]valkey.Client{c.id: c.client}
	if c.client.Mode() == valkey.ClientModeCluster {
		nodes = c.client.Nodes() // SCRIPT LOAD has no key to route it by
	}
	digest, err := "", errors.New("valkeygo: no node to load the script on")
	for addr, node := range nodes {
		if digest, err = node.Do(ctx, node.B().ScriptLoad().Script(script).Build()).ToString(); err != nil {
			return "", fmt.Errorf("valkeygo: SCRIPT LOAD on %s: %w", addr, err)
		}
	}
	return digest, err // every node reports the script's SHA-1
}

// NodeID implements [driver.Identifier]: [driver.AddrNodeID] of the
// server's address for a client of one server (standalone mode, one node),
// else the identity of the client value, as driver.Identifier describes.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return c.id
}

func clientID(client valkey.Client) string {
	nodes := client.Nodes()
	for addr := range nodes {
		if id, err := driver.AddrNodeID("tcp", addr); err == nil && len(nodes) == 1 && client.Mode() == valkey.ClientModeStandalone {
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

// Wait implements [driver.Waiter]: it returns once Subscribe's connection
// is given back and its goroutine has ended, or with ctx.Err().
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx) // a nil Hub, of a Conn New did not make, returns nil
}

func (c *Conn) dialPubSub(context.Context) (pubsub.Conn, error) {
	dc, release := c.client.Dedicate()
	ended := dc.SetPubSubHooks(valkey.PubSubHooks{
		OnMessage: func(m valkey.PubSubMessage) { c.hub.Message(m.Channel, m.Message) },
		OnSubscription: func(s valkey.PubSubSubscription) {
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
