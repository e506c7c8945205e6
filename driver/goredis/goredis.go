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
//	if err != nil {
//		return err
//	}
//
// [New] accepts any client that runs scripts: a *redis.Client (including
// one from redis.NewFailoverClient), a *redis.ClusterClient, a *redis.Ring
// or a redis.UniversalClient. A cluster, a ring or a Sentinel-managed
// deployment then counts as one Redlock node, which is only as safe as its
// failover: a Ring hands the keys of a shard it marks down to the other
// shards, where a lock held on the failed shard does not exist, so a Ring of
// several shards is best not used as a node.
//
// # Errors
//
// A Redis error reply is returned as the client's error, so errors.As with
// redis.Error still works. [Conn.EvalSha] reports a missing script with an
// error that matches both [driver.ErrNoScript] and the server's own error.
// A nil reply is a nil value, not redis.Nil.
//
// # Context
//
// Every method returns as soon as its ctx is done, whatever the client's
// options. go-redis applies a context's deadline to its pool wait and to the
// socket only when the client's ContextTimeoutEnabled option is set, and
// never reacts to a cancellation in the middle of a command. So a call runs
// on the caller's goroutine only when both hold: the client is a
// *redis.Client (from redis.NewClient or redis.NewFailoverClient) with
// ContextTimeoutEnabled set and neither ReadTimeout nor WriteTimeout at -2
// (which turns socket deadlines off), and ctx is one that only its deadline
// can end, which [adapter.Inline] reports: locksmith makes those for the calls
// of a round on several nodes and for any call whose caller's context cannot
// be cancelled, as the driver package documents. Any other call, and any call
// through a ClusterClient or Ring, whose command-info and topology lookups
// keep timeouts of their own, runs in a goroutine of its own, except a call
// of a redlock round on several nodes: the round runs it on a goroutine of
// the redlock Client's that it stops waiting for at the deadline, so the
// client runs there (see adapter.Run), and the method may return after ctx
// ended, when the client's own timeouts (below) end the command. Hooks
// added to the client run on the goroutine that runs the command.
//
// # What may outlive a call
//
// When ctx ends before a call that runs in a goroutine of its own, the
// method returns ctx.Err() at once and the command finishes in the
// background: a command already sent waits for its reply for up to the
// client's ReadTimeout (3s by default), and one whose connection was still
// being dialled waits for the dial, up to the client's DialTimeout (5s by
// default), before its connection goes back to the pool. The reply is
// discarded. A call on the caller's goroutine leaves nothing behind; a
// call of a redlock round that goes on past its ctx holds the redlock
// Client's goroutine for as long, which the Client's Wait stops waiting for
// a per-node timeout after the deadline. [Conn.Wait] waits for the calls
// still running, those too.
// Subscribe's shared pub/sub connection and its reading goroutine live
// while some subscription lasts; the last cancel closes the connection,
// which ends the goroutine.
//
// # Start-up with nodes down
//
// redis.NewClient does not connect: each command dials as it needs a
// connection. A locker built while a minority of its nodes is down starts,
// counts those nodes as failed while they are down, and uses them once
// they are up.
//
// # Concurrency
//
// A Conn is safe for concurrent use, as the go-redis clients are.
package goredis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
)

var (
	_ driver.Conn       = (*Conn)(nil)
	_ driver.Identifier = (*Conn)(nil)
	_ driver.Notifier   = (*Conn)(nil)
	_ driver.Waiter     = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts through a go-redis client. Create
// one with [New].
type Conn struct {
	client redis.Scripter
	hub    *adapter.Hub // the pub/sub connection of Subscribe
	// doer is client when it can send any command, as every go-redis
	// client can, and nil otherwise.
	doer doer
	// inline is set when client applies a context's deadline to every wait
	// and socket read and write of a command: see the package doc.
	inline bool
	// background counts the goroutines of calls that do not run inline.
	background adapter.Background
}

// Wait implements [driver.Waiter]: it blocks until every call of the Conn
// has finished, including those that returned early because their ctx
// ended and whose command still runs in the background, and returns nil;
// or it returns ctx.Err() when ctx ends first. See the package
// documentation for how long such a command may go on. It does not wait
// for Subscribe's connection.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil // New(nil) returns nil, and nil runs no calls
	}
	return c.background.Wait(ctx)
}

// New returns a Conn that sends its commands through client. The client
// remains the caller's: closing it is the caller's job, after the last use of
// the Conn.
//
// client must run each command when it is called, so a redis.Pipeliner will
// not do.
//
// New(nil) returns nil, which redlock.New reports as a nil Conn. So does a
// nil pointer such as a nil *redis.Client.
func New(client redis.Scripter) *Conn {
	if client == nil {
		return nil
	}
	if v := reflect.ValueOf(client); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	doer, _ := client.(doer)
	c := &Conn{client: client, doer: doer, inline: appliesDeadline(client)}
	c.hub = adapter.NewHub(c.dialPubSub)
	return c
}

// doer sends any command. EVAL and EVALSHA go through it when it can, with
// their arguments laid out in one slice: the client's own Eval and EvalSha
// would copy them into a second one.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// appliesDeadline reports whether client bounds every wait and socket read
// and write of a command by its context's deadline. go-redis passes the
// context to the socket only with ContextTimeoutEnabled, and a timeout of -2
// (normalized to a negative value) skips setting socket deadlines. Dials
// run in the pool's background and the caller waits for them on ctx, so a
// custom Dialer is no exception.
func appliesDeadline(client redis.Scripter) bool {
	c, ok := client.(*redis.Client)
	if !ok {
		return false
	}
	opt := c.Options()
	return opt.ContextTimeoutEnabled && opt.ReadTimeout >= 0 && opt.WriteTimeout >= 0
}

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	if c.inline && adapter.Inline(ctx) {
		val, err := c.eval(ctx, evalCommand, script, keys, args)
		return val, adapter.ContextErr(ctx, err)
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (any, error) {
		return c.eval(ctx, evalCommand, script, keys, args)
	})
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	if c.inline && adapter.Inline(ctx) {
		val, err := c.eval(ctx, evalShaCommand, sha1, keys, args)
		return val, adapter.ContextErr(ctx, err)
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (any, error) {
		return c.eval(ctx, evalShaCommand, sha1, keys, args)
	})
}

// errNoClient is the error of a Conn that New did not make.
var errNoClient = errors.New("goredis: Conn has no client; make it with New")

// The names of the commands eval sends, held as interface values so that
// laying out a command's arguments does not allocate a copy of its name.
var (
	evalCommand    any = "eval"
	evalShaCommand any = "evalsha"
)

// eval sends command, EVAL or EVALSHA, and normalizes its reply. Keys and
// args go to go-redis one string each, so none is flattened or reformatted.
func (c *Conn) eval(ctx context.Context, command any, scriptOrDigest string, keys, args []string) (any, error) {
	var cmd *redis.Cmd
	if c.doer != nil {
		cmdArgs := make([]any, 0, 3+len(keys)+len(args))
		cmdArgs = append(cmdArgs, command, scriptOrDigest, len(keys))
		cmdArgs = appendStrings(cmdArgs, keys)
		cmd = c.doer.Do(ctx, appendStrings(cmdArgs, args)...)
	} else {
		argValues := appendStrings(make([]any, 0, len(args)), args)
		if command == evalShaCommand {
			cmd = c.client.EvalSha(ctx, scriptOrDigest, keys, argValues...)
		} else {
			cmd = c.client.Eval(ctx, scriptOrDigest, keys, argValues...)
		}
	}
	val, err := reply(cmd.Result())
	// Newer go-redis versions report this as redis.ErrNoScript, whose
	// text also starts with the NOSCRIPT prefix. HasErrorPrefix
	// allocates even for a nil error.
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return nil, adapter.NoScript(err)
	}
	return val, err
}

// appendStrings appends each of values to dst as a string of its own.
func appendStrings(dst []any, values []string) []any {
	for _, v := range values {
		dst = append(dst, v)
	}
	return dst
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. A *redis.ClusterClient loads it on every shard of the
// cluster, and a *redis.Ring on every shard that is up, so that EVALSHA
// succeeds wherever the keys lead. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if c == nil || c.client == nil {
		return "", errNoClient
	}
	if c.inline && adapter.Inline(ctx) {
		digest, err := c.scriptLoad(ctx, script)
		return digest, adapter.ContextErr(ctx, err)
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (string, error) {
		return c.scriptLoad(ctx, script)
	})
}

func (c *Conn) scriptLoad(ctx context.Context, script string) (string, error) {
	var digest string
	var err error
	if ring, ok := c.client.(*redis.Ring); ok {
		// A Ring sends SCRIPT LOAD, which has no key, to one shard at
		// random.
		digest, err = loadOnEveryShard(ctx, ring, script)
	} else {
		digest, err = c.client.ScriptLoad(ctx, script).Result()
	}
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

// NodeID identifies the node behind the Conn for [driver.Identifier]. For a
// *redis.Client that dials a fixed address it is [driver.AddrNodeID] of the
// client's network and address, so two clients of the same server share it
// whatever database they select (the databases of one server fail together
// and count as one node), "localhost:6379" and "127.0.0.1:6379" are one
// node, and so are a go-redis and a rueidis client of one server. For any
// other client (a failover client, a cluster, a ring) it is the identity of
// the client value, so only the same client wrapped twice shares it.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	if client, ok := c.client.(*redis.Client); ok {
		if id, ok := addressID(client.Options()); ok {
			return id
		}
	}
	return fmt.Sprintf("%T@%p", c.client, c.client)
}

// addressID returns the ID of the node that opt dials, and false when opt
// names no fixed address: a failover client's Addr is a placeholder, and its
// dialer asks Sentinel for the current master.
func addressID(opt *redis.Options) (string, bool) {
	id, err := driver.AddrNodeID(opt.Network, opt.Addr)
	return id, err == nil
}

// reply turns go-redis's redis.Nil into the nil reply the driver contract
// asks for. go-redis already decodes integers as int64, bulk and status
// strings as string and arrays as []any with nil elements.
func reply(val any, err error) (any, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return val, nil
}
