// Package goredis adapts a go-redis v9 client to locksmith's [driver.Conn].
//
// Wrap each independent Redis node's client with [New] and hand the Conns to
// redlock.New:
//
//	nodes := make([]driver.Conn, 0, len(addrs))
//	for _, addr := range addrs {
//		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
//		defer client.Close()
//		nodes = append(nodes, goredis.New(client))
//	}
//	locker, err := redlock.New(nodes)
//
// The client settings that matter to locksmith (redis.Options; the same
// names in ClusterOptions, FailoverOptions and RingOptions):
//
//   - ContextTimeoutEnabled: true, so that locksmith's deadlines bound the
//     pool wait and each socket read and write (see [Conn.HonorsDeadline]).
//   - MaxRetries, DialerRetries, DialTimeout, ReadTimeout: keep the
//     client's retries and waits inside locksmith's node timeout, or
//     locksmith stops waiting first and an error names no cause.
//   - redis.SetLogger (or logging.Disable): go-redis logs "failed to dial
//     after 5 attempts" to stderr on every dial to a node that is down.
//   - TLSConfig for TLS; Username and Password (or CredentialsProvider)
//     for an ACL user, whose rules the README lists.
//
// A Redis error reply is returned as the client's error (errors.As with
// redis.Error works).
package goredis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.DeadlineHonorer = (*Conn)(nil)
	_ driver.Identifier      = (*Conn)(nil)
	_ driver.Notifier        = (*Conn)(nil)
	_ driver.Waiter          = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts through a go-redis client. Create
// one with [New].
type Conn struct {
	client redis.Scripter
	hub    *pubsub.Hub // the pub/sub connection of Subscribe
}

// New returns a Conn that sends its commands through client, which stays
// the caller's to close, after the last use of the Conn. client may be a
// *redis.Client (from redis.NewClient or redis.NewFailoverClient), a
// *redis.ClusterClient, a *redis.Ring or a redis.UniversalClient, but not a
// redis.Pipeliner. A cluster or a Sentinel deployment then counts as one
// Redlock node, only as safe as its failover; a Ring of several shards
// hands a failed shard's keys to the others, so is best not used as one.
//
// New(nil), and a nil pointer such as a nil *redis.Client, return nil,
// which redlock.New reports as a nil Conn.
func New(client redis.Scripter) *Conn {
	if client == nil {
		return nil
	}
	if v := reflect.ValueOf(client); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	c := &Conn{client: client}
	c.hub = pubsub.NewHub(c.dialPubSub)
	return c
}

// HonorsDeadline implements [driver.DeadlineHonorer]. It reports true for a
// *redis.Client (from redis.NewClient or redis.NewFailoverClient) with
// ContextTimeoutEnabled and neither ReadTimeout nor WriteTimeout at -2:
// go-redis then waits for a pooled connection, a dial and a retry's
// backoff only until ctx ends, and sets no socket deadline past ctx's.
// Without ContextTimeoutEnabled it uses its own timeouts, and a
// ClusterClient or a Ring looks up command info and topology with timeouts
// of their own. Hooks added to the client must return by then too.
func (c *Conn) HonorsDeadline() bool {
	if c == nil {
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

// Wait implements [driver.Waiter]: it returns once Subscribe's pub/sub
// connection is closed and its goroutine has ended, or with ctx.Err().
// The redlock Client's Close calls it.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	return c.hub.Wait(ctx)
}

// errNoClient is the error of a Conn that New did not make.
var errNoClient = errors.New("goredis: Conn has no client; make it with New")

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	return reply(c.client.Eval(ctx, script, keys, asArgs(args)...).Result())
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	val, err := reply(c.client.EvalSha(ctx, sha1, keys, asArgs(args)...).Result())
	// Newer go-redis versions report this as redis.ErrNoScript, whose
	// text starts with the same prefix.
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return nil, driver.MarkNoScript(err)
	}
	return val, err
}

// reply turns redis.Nil into the nil reply of the driver contract. go-redis
// already decodes integers as int64, strings as string and arrays as []any.
func reply(val any, err error) (any, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return val, err
}

// asArgs returns values as arguments of a command, one string each, so
// that none is flattened or reformatted.
func asArgs(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. A *redis.ClusterClient loads it on every shard of the
// cluster, and a *redis.Ring on every shard that is up, so that EVALSHA
// succeeds wherever the keys lead. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if c == nil || c.client == nil {
		return "", errNoClient
	}
	if ring, ok := c.client.(*redis.Ring); ok {
		// A Ring sends SCRIPT LOAD, which has no key, to one shard.
		return loadOnEveryShard(ctx, ring, script)
	}
	digest, err := c.client.ScriptLoad(ctx, script).Result()
	if err == nil && digest == "" {
		return "", errors.New("goredis: SCRIPT LOAD returned no digest; is the client a pipeline?")
	}
	return digest, err
}

func loadOnEveryShard(ctx context.Context, ring *redis.Ring, script string) (string, error) {
	var mu sync.Mutex
	var digest string
	err := ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
		d, err := shard.ScriptLoad(ctx, script).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if digest != "" && d != digest {
			return fmt.Errorf("goredis: ring shard %s reported digest %q, another %q", shard, d, digest)
		}
		digest = d
		return nil
	})
	return digest, err
}

// NodeID implements [driver.Identifier]. For a *redis.Client that dials a
// fixed address it is [driver.AddrNodeID] of that address, whatever database
// the client selects (the databases of one server fail together). For any
// other client (failover, cluster, ring) it is the client value's
// identity: only the same client wrapped twice shares it.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	if client, ok := c.client.(*redis.Client); ok {
		// A failover client's Addr is a placeholder: its dialer asks
		// Sentinel for the current master.
		if id, err := driver.AddrNodeID(client.Options().Network, client.Options().Addr); err == nil {
			return id
		}
	}
	return driver.ClientNodeID(c.client)
}
