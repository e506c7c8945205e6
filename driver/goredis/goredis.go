// Package goredis adapts a go-redis v9 client to locksmith's [driver.Conn].
//
// The client settings that matter to locksmith, in redis.Options (the same
// names in ClusterOptions and FailoverOptions):
//
//   - ContextTimeoutEnabled: true, so that ctx bounds every wait of a call.
//   - MaxRetries: -1, DialerRetries: 1, DialTimeout, ReadTimeout: keep
//     retries and waits inside the node timeout, or an error names no cause.
//   - redis.SetLogger: go-redis logs every failed dial to stderr.
//   - TLSConfig; Username and Password (or CredentialsProvider) for an ACL
//     user, whose rules the README lists.
//
// Wrap each independent node's client with [New] and hand the Conns to
// redlock.New. A Redis error reply is the client's own, a redis.Error.
package goredis

import (
	"context"
	"errors"
	"reflect"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var (
	_ driver.DeadlineHonorer = (*Conn)(nil)
	_ driver.Identifier      = (*Conn)(nil)
	_ driver.Notifier        = (*Conn)(nil)
	_ driver.Waiter          = (*Conn)(nil)

	errNoClient = errors.New("goredis: Conn has no client; make it with New")
	errRing     = errors.New("goredis: a redis.Ring shards keys over several servers, so it cannot be one Redlock node")
)

// Conn is a [driver.Conn] over a go-redis client. Create one with [New].
type Conn struct {
	client redis.Scripter
	hub    *pubsub.Hub // the pub/sub connection of Subscribe
	err    error       // why New refused client
}

// New returns a Conn over client, a *redis.Client (from redis.NewClient or
// redis.NewFailoverClient) or a *redis.ClusterClient, which stays the
// caller's to close after the last use of the Conn. A cluster or Sentinel
// deployment is one Redlock node, only as safe as its failover. Every call
// of a Conn over a *redis.Ring fails: a Ring hands a failed shard's keys
// to the others. New(nil) and a nil pointer return nil.
func New(client redis.Scripter) *Conn {
	if v := reflect.ValueOf(client); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	if _, ok := client.(*redis.Ring); ok {
		return &Conn{client: client, err: errRing}
	}
	c := &Conn{client: client}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

func (c *Conn) usable() error {
	if c == nil || c.client == nil {
		return errNoClient
	}
	return c.err
}

// HonorsDeadline implements [driver.DeadlineHonorer]: true for a
// *redis.Client with ContextTimeoutEnabled and neither ReadTimeout nor
// WriteTimeout at -2. Hooks added to the client must honour ctx too.
func (c *Conn) HonorsDeadline() bool {
	if c.usable() != nil {
		return false
	}
	client, ok := c.client.(*redis.Client)
	if !ok {
		return false
	}
	opt := client.Options()
	// go-redis normalizes a timeout of -2 (no socket deadline) to -1.
	return opt.ContextTimeoutEnabled && opt.ReadTimeout >= 0 && opt.WriteTimeout >= 0
}

// Eval runs script with EVAL; see [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.run(args, func(s redis.Scripter, argv []any) *redis.Cmd { return s.Eval(ctx, script, keys, argv...) })
}

// EvalSha runs the script cached under sha1 with EVALSHA; see [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	val, err := c.run(args, func(s redis.Scripter, argv []any) *redis.Cmd { return s.EvalSha(ctx, sha1, keys, argv...) })
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // also newer go-redis's redis.ErrNoScript
		return nil, driver.MarkNoScript(err)
	}
	return val, err
}

// run sends a command ending in args; go-redis decodes replies as the
// driver contract asks, but for a nil reply (redis.Nil).
func (c *Conn) run(args []string, command func(s redis.Scripter, argv []any) *redis.Cmd) (any, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	argv := make([]any, len(args)) // one each: go-redis grows its slice for a []string
	for i, arg := range args {
		argv[i] = arg
	}
	val, err := command(c.client, argv).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return val, err
}

// ScriptLoad caches script with SCRIPT LOAD, on every shard of a
// *redis.ClusterClient; see [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if err := c.usable(); err != nil {
		return "", err
	}
	digest, err := c.client.ScriptLoad(ctx, script).Result()
	if err == nil && digest == "" {
		return "", errors.New("goredis: SCRIPT LOAD returned no digest; is the client a pipeline?")
	}
	return digest, err
}

// NodeID implements [driver.Identifier]: [driver.AddrNodeID] of a
// *redis.Client's address, else [driver.ClientNodeID] of the client.
func (c *Conn) NodeID() string {
	if c == nil || c.client == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	// A failover client's Addr is a placeholder, which AddrNodeID refuses.
	if client, ok := c.client.(*redis.Client); ok {
		if id, err := driver.AddrNodeID(client.Options().Network, client.Options().Addr); err == nil {
			return id
		}
	}
	return driver.ClientNodeID(c.client)
}

// Wait implements [driver.Waiter] with [pubsub.Hub.Wait].
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx)
}

// Subscribe implements [driver.Notifier] over one redis.PubSub that the
// Conn's subscriptions share. A client that is no redis.UniversalClient
// returns an error: locksmith then polls.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if _, ok := c.client.(redis.UniversalClient); !ok {
		return nil, errors.New("goredis: the client has no Subscribe method")
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

// dialPubSub returns a redis.PubSub, which connects at its first SUBSCRIBE.
func (c *Conn) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	return pubSub{c.client.(redis.UniversalClient).Subscribe(ctx)}, nil
}

// pubSub is a redis.PubSub as a [pubsub.Hub] drives it.
type pubSub struct{ *redis.PubSub }

func (p pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	// PubSub.Receive ignores its ctx; closing the PubSub ends the read.
	stop := context.AfterFunc(ctx, func() { p.PubSub.Close() })
	defer stop()
	for {
		msg, err := p.PubSub.Receive(context.Background())
		var refusal redis.Error
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &refusal):
			hub.Refused(err) // an error reply: the connection is fine
		case err != nil:
			return err
		}
		switch msg := msg.(type) {
		case *redis.Subscription:
			if msg.Kind == "subscribe" {
				hub.Confirmed(msg.Channel)
			}
		case *redis.Message:
			hub.Message(msg.Channel, msg.Payload)
		}
	}
}

func (p pubSub) Close() { p.PubSub.Close() }
