// Package rueidis adapts a rueidis client to locksmith's [driver.Conn].
//
// Wrap the client of each independent Redis node with [New] and hand the
// Conns to redlock.New:
//
//	nodes := make([]driver.Conn, 0, len(addrs))
//	for _, addr := range addrs {
//		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
//		if err != nil {
//			return err
//		}
//		defer client.Close()
//		nodes = append(nodes, lsrueidis.New(client))
//	}
//	locker, err := redlock.New(nodes)
//
// (lsrueidis names this package, imported beside rueidis itself.)
//
// [New] accepts any rueidis.Client: a single server, a Sentinel-managed
// deployment or a Redis Cluster, each of which then counts as one Redlock
// node.
//
// # Errors
//
// A Redis error reply is returned as the client's *rueidis.RedisError.
// [Conn.EvalSha] reports a missing script with an error that matches both
// [driver.ErrNoScript] and the server's error. A nil reply is a nil value,
// not rueidis.Nil. On a cluster client, keys in different hash slots are an
// error whose text starts with CROSSSLOT, as the server's own error does:
// rueidis refuses to build such a command, so it never reaches the server.
//
// # Context
//
// rueidis reacts to a cancelled ctx only while a call has no deadline: a
// call with one, as every call of locksmith has, may be sent on a path that
// applies the deadline to the socket and waits for the reply even after ctx
// is cancelled. Nor is a context that only its deadline can end enough to
// run a call on the caller's goroutine, as the go-redis adapter does: a call
// that finds its connection being dialled again waits for that dial without
// looking at its ctx. So that every method returns as soon as its ctx is
// done, a call whose ctx can end runs in a goroutine of its own. When ctx ends
// first, the method returns ctx.Err() at once and the command finishes in
// the background, bounded by ctx's deadline and the client's
// ConnWriteTimeout; its reply is discarded.
//
// # Concurrency
//
// A Conn is safe for concurrent use, as a rueidis.Client is.
package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/adapt"
)

var (
	_ driver.Conn       = (*Conn)(nil)
	_ driver.Identifier = (*Conn)(nil)
	_ driver.Notifier   = (*Conn)(nil)
)

// Conn is a [driver.Conn] that runs scripts through a rueidis client. Create
// one with [New].
type Conn struct {
	client rueidis.Client
	hub    *adapt.Hub // the pub/sub connection of Subscribe
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
	c.hub = adapt.NewHub(c.dialPubSub)
	return c
}

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	cmd, err := build(func() rueidis.Completed {
		return c.client.B().Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if err != nil {
		return nil, err
	}
	return adapt.Run(ctx, func(ctx context.Context) (any, error) {
		return reply(c.client.Do(ctx, cmd))
	})
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	cmd, err := build(func() rueidis.Completed {
		return c.client.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if err != nil {
		return nil, err
	}
	return adapt.Run(ctx, func(ctx context.Context) (any, error) {
		val, err := reply(c.client.Do(ctx, cmd))
		if redisErr, ok := rueidis.IsRedisErr(err); ok && redisErr.IsNoScript() {
			return nil, adapt.NoScript(err)
		}
		return val, err
	})
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. A cluster client loads it on every node it knows, so that
// EVALSHA succeeds wherever the keys lead. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return adapt.Run(ctx, func(ctx context.Context) (string, error) {
		if c.client.Mode() == rueidis.ClientModeCluster {
			// SCRIPT LOAD has no key, so the cluster client would
			// send it to just one node.
			return loadOnEveryNode(ctx, c.client.Nodes(), script)
		}
		return loadOn(ctx, c.client, script)
	})
}

func loadOn(ctx context.Context, client rueidis.Client, script string) (string, error) {
	return client.Do(ctx, client.B().ScriptLoad().Script(script).Build()).ToString()
}

func loadOnEveryNode(ctx context.Context, nodes map[string]rueidis.Client, script string) (string, error) {
	if len(nodes) == 0 {
		return "", errors.New("rueidis: the cluster client knows no nodes to load the script on")
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		digests = make(map[string]string, len(nodes))
		errs    []error
	)
	for addr, node := range nodes {
		wg.Go(func() {
			digest, err := loadOn(ctx, node, script)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("rueidis: SCRIPT LOAD on %s: %w", addr, err))
				return
			}
			digests[addr] = digest
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	var digest string
	for addr, d := range digests {
		if digest != "" && d != digest {
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s reported digest %q, another node %q", addr, d, digest)
		}
		digest = d
	}
	return digest, nil
}

// NodeID identifies the node behind the Conn for [driver.Identifier] by the
// identity of the client: two Conns share an ID exactly when they wrap the
// same client.
func (c *Conn) NodeID() string {
	return fmt.Sprintf("%T@%p", c.client, c.client)
}

// errCrossSlot reports keys in different hash slots on a cluster client. It
// starts with the error code of the server's own error for this case, so
// that a caller who recognizes that error recognizes this one too.
var errCrossSlot = errors.New("CROSSSLOT Keys in request don't hash to the same slot (refused by the rueidis client)")

// crossSlotPanic is the text of the panic with which the builder of a
// rueidis cluster client refuses keys in different hash slots.
const crossSlotPanic = "different key slots"

// build runs a command builder and turns its panic into an error. The
// builder of a cluster client panics when keys fall in different hash
// slots, which is the caller's mistake to be reported, not a crash.
func build(builder func() rueidis.Completed) (cmd rueidis.Completed, err error) {
	defer func() {
		if p := recover(); p != nil {
			if text, ok := p.(string); ok && strings.Contains(text, crossSlotPanic) {
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
