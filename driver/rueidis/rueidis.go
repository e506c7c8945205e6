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
// (lsrueidis names this package, imported beside rueidis itself.)
//
// # Start-up with nodes down
//
// rueidis.NewClient connects at once and fails when its node is down, so a
// program that builds every client with it before redlock.New cannot start
// while any one node is down, although a Redlock needs only a majority.
// [Open] builds the client in the background and keeps trying, so a
// minority of nodes down at start-up costs only their votes until they
// come up. [New] wraps a client the caller already built.
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
// done, a call whose ctx can end runs in a goroutine of its own, except a
// call of a redlock round on several nodes: the round runs it on a
// goroutine of the redlock Client's that it stops waiting for at the
// deadline, so the client runs there (see adapter.Run), and the method may
// return after ctx ended, when the bounds below end the command.
//
// A call whose ctx only its deadline ends, as redlock makes for a round on
// one node, runs on the calling goroutine when the Conn has a spare
// connection (a call of a round on several nodes runs there anyway, on the
// client's shared connection, see above): a dedicated connection of the
// client (Client.Dedicate), which no other caller shares, is never dialled
// again, and on which rueidis bounds a call by ctx's deadline. A Conn over
// a client of one server opens one after such a call that found none,
// unless it has one in another call's hands, in a goroutine of its own (a
// dial for it waits on no call), keeps it once it has answered a PING, and
// gives it back to the client after 1s without a call, after a call whose
// command got no answer on it, in Wait, and, for a Conn from Open, in
// Close. It holds one such connection at most, besides the client's own;
// a cluster or Sentinel client gets none.
//
// # What may outlive a call
//
// When ctx ends first, the method returns ctx.Err() at once and the
// command finishes in the background, bounded by ctx's deadline and the
// client's ConnWriteTimeout (and, while the client dials its connection
// again, by its Dialer's timeout, 5s by default); its reply is discarded.
// A call of a redlock round on several nodes that goes on past its ctx
// holds the redlock Client's goroutine for as long, which the Client's
// Wait stops waiting for a per-node timeout after the deadline.
// The goroutine that opens a spare connection runs until the client lends
// it one of its dedicated connections, which waits while all of them
// (BlockingPoolSize) are in use and otherwise for a dial bounded by the
// Dialer's timeout and the client's ConnWriteTimeout, and then until the
// PING is answered, for up to 1s more. A spare connection is given back
// in a goroutine of its own, as rueidis may send it commands that clear
// its state and wait for their replies (bounded by its keepalive PING and
// ConnWriteTimeout), or wait up to 1s to close it.
// [Conn.Wait] waits for the calls still running, those on the spare
// connection and those goroutines too, and then gives back the spare
// connection and waits for that; without Wait it goes back within 1s of
// the Conn's last call, by a timer. A Conn from [Open] also
// runs the goroutine that builds its client, until that succeeds or
// [Conn.Close] ends it. Subscribe's shared connection lives while some
// subscription lasts and is given back when the last one ends.
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
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
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
	client rueidis.Client // nil for a Conn from Open
	opened *opened        // the client Open builds, nil for a Conn from New
	hub    *adapter.Hub   // the pub/sub connection of Subscribe
	id     string         // the NodeID
	// background counts the goroutines of calls whose ctx can end, and
	// those that open a spare.
	background adapter.Background
	// spare is a dedicated connection of a client of one server, kept
	// for calls that run on the calling goroutine: see the package
	// documentation. dedicated is 1 from when a goroutine starts to open
	// one until it is given back, kept or in a call's hands meanwhile, so
	// that a call that finds the spare in another call's hands does not
	// open a second.
	spare     *adapter.Spare[dedicated]
	dedicated atomic.Int32
	closed    atomic.Bool // set by Close
}

// dedicated is a connection of a client that no other caller shares
// (rueidis.Client.Dedicate), and the function that gives it back.
type dedicated struct {
	client  rueidis.DedicatedClient
	release func()
}

// keepSpare is how long a Conn keeps its spare connection unused before it
// gives it back to the client; fillTimeout bounds the PING with which it
// checks a new one.
const (
	keepSpare   = time.Second
	fillTimeout = time.Second
)

// newSpare returns the spare of c, a new Conn.
func newSpare(c *Conn) *adapter.Spare[dedicated] {
	// NewSpare fails only for a keep time that is not positive or a nil
	// release function.
	spare, _ := adapter.NewSpare(keepSpare, c.giveBack)
	return spare
}

// giveBack gives d, the Conn's dedicated connection, back to the client.
// It does so in a goroutine of its own: rueidis may send a connection it
// gets back commands that clear its state, and wait for their replies
// from a server that does not answer, or wait up to 1s to close it.
func (c *Conn) giveBack(d dedicated) {
	c.background.Go(func() { c.drop(d) })
}

// drop gives d back to the client on the calling goroutine, after which
// the Conn may open another.
func (c *Conn) drop(d dedicated) {
	d.release()
	c.dedicated.Store(0)
}

// keep offers d, whose last command got an answer, to the Conn's spare and
// reports whether it was kept. A Conn closed meanwhile gives it back.
func (c *Conn) keep(d dedicated) bool {
	if !c.spare.Put(d) {
		return false
	}
	if c.closed.Load() {
		c.spare.Release()
	}
	return true
}

// Wait implements [driver.Waiter]: it blocks until every call of the Conn
// has finished, including those that returned early because their ctx
// ended and whose command still runs in the background, and returns nil;
// or it returns ctx.Err() when ctx ends first. It waits for the goroutines
// that open and give back the spare connection too, and then gives the
// spare back (see the package documentation, which says how long each may
// go on). It waits neither for Subscribe's connection nor for [Open]'s
// attempts to build the client.
func (c *Conn) Wait(ctx context.Context) error {
	if c == nil {
		return nil // New(nil) returns nil, and nil runs no calls
	}
	if err := c.background.Wait(ctx); err != nil {
		return err
	}
	// Giving back the spare runs in the background too.
	c.spare.Release()
	return c.background.Wait(ctx)
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
	c := &Conn{client: client, id: clientID(client)}
	c.spare = newSpare(c)
	c.hub = adapter.NewHub(c.dialPubSub)
	return c
}

// getClient returns the client to send a command through. For a Conn from
// Open it waits, until ctx ends, for the first attempt to build it.
func (c *Conn) getClient(ctx context.Context) (rueidis.Client, error) {
	switch {
	case c == nil || (c.opened == nil && c.client == nil):
		return nil, errNoClient
	case c.opened == nil:
		return c.client, nil
	}
	return c.opened.get(ctx)
}

// errNoClient is the error of a Conn that neither New nor Open made.
var errNoClient = errors.New("rueidis: Conn has no client; make it with New or Open")

// Eval runs script with EVAL. See [driver.Conn].
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	client, err := c.getClient(ctx)
	if err != nil {
		return nil, err
	}
	cmd, err := build(func() rueidis.Completed {
		return client.B().Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if err != nil {
		return nil, err
	}
	return c.do(ctx, client, cmd)
}

// EvalSha runs the script cached under sha1 with EVALSHA. When the server
// does not have it, the error matches [driver.ErrNoScript]. See
// [driver.Conn].
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	client, err := c.getClient(ctx)
	if err != nil {
		return nil, err
	}
	cmd, err := build(func() rueidis.Completed {
		return client.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
	if err != nil {
		return nil, err
	}
	val, err := c.do(ctx, client, cmd)
	if redisErr, ok := rueidis.IsRedisErr(err); ok && redisErr.IsNoScript() {
		return nil, adapter.NoScript(err)
	}
	return val, err
}

// do runs cmd, built by client's builder, and returns its reply as soon as
// ctx is done: see the package documentation. A call whose ctx only its
// deadline ends, but for a call of a round on several nodes, runs on the
// calling goroutine when the Conn has a spare connection, and otherwise has
// one opened for a later call; any other call goes through adapter.Run.
func (c *Conn) do(ctx context.Context, client rueidis.Client, cmd rueidis.Completed) (any, error) {
	// A call of a round on several nodes runs on the calling goroutine
	// through Run anyway, where the client's shared connection batches
	// the commands of concurrent rounds.
	if adapter.Inline(ctx) && !adapter.Unwaited(ctx) {
		// Counted, as Run counts a call it makes on the calling
		// goroutine, before it takes the connection, so that a Wait
		// that finds none kept waits for it.
		c.background.Begin()
		if d, ok := c.spare.Take(); ok {
			defer c.background.End()
			return c.doOn(ctx, d, cmd)
		}
		c.background.End()
		c.fillSpare(client)
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (any, error) {
		return reply(client.Do(ctx, cmd))
	})
}

// doOn runs cmd on d, which is the caller's, and then keeps d as the
// Conn's spare, or gives it back to the client after a failure. rueidis
// bounds a call on a dedicated connection by ctx's deadline and never
// dials one again, so the call ends by the deadline.
func (c *Conn) doOn(ctx context.Context, d dedicated, cmd rueidis.Completed) (any, error) {
	result := d.client.Do(ctx, cmd)
	if result.NonRedisError() != nil || !c.keep(d) {
		c.giveBack(d)
	}
	val, err := reply(result)
	return val, adapter.ContextErr(ctx, err)
}

// fillSpare opens a spare connection for the Conn in a goroutine of its
// own, unless client serves more than one server or the Conn has one
// already, kept, in a call's hands or being opened: a dedicated connection
// of the client, which it keeps once it has answered a PING. Opening one
// can wait for a dial that does not look at any ctx, which no call must
// wait for.
func (c *Conn) fillSpare(client rueidis.Client) {
	if c.closed.Load() || client.Mode() != rueidis.ClientModeStandalone || !c.dedicated.CompareAndSwap(0, 1) {
		return
	}
	c.background.Go(func() {
		dc, release := client.Dedicate()
		d := dedicated{dc, release}
		ctx, cancel := context.WithTimeout(context.Background(), fillTimeout)
		defer cancel()
		if dc.Do(ctx, dc.B().Ping().Build()).Error() != nil || !c.keep(d) {
			c.drop(d) // on a goroutine of its own already
		}
	})
}

// ScriptLoad caches script with SCRIPT LOAD and returns the digest the
// server reports. A cluster client loads it on every node it knows, so that
// EVALSHA succeeds wherever the keys lead. See [driver.Conn].
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	client, err := c.getClient(ctx)
	if err != nil {
		return "", err
	}
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (string, error) {
		if client.Mode() == rueidis.ClientModeCluster {
			// SCRIPT LOAD has no key, so the cluster client would
			// send it to just one node.
			return loadOnEveryNode(ctx, client.Nodes(), script)
		}
		return loadOn(ctx, client, script)
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

// NodeID identifies the node behind the Conn for [driver.Identifier]. For a
// client of one server (rueidis's standalone mode, a single node) it is
// [driver.AddrNodeID] of that server's address, so two clients of the same
// server share it, "localhost:6379" and "127.0.0.1:6379" are one node, and
// so are a rueidis and a go-redis client of one server. For a Conn from
// [Open] it is the ID of the option's one InitAddress, when the option
// names exactly one and no Sentinel. For a cluster or Sentinel client it
// is the identity of the client value, so only the same client wrapped
// twice shares it.
func (c *Conn) NodeID() string {
	if c == nil {
		return "" // New(nil) returns nil, which redlock.New refuses
	}
	return c.id
}

// clientID returns the NodeID of a Conn over client.
func clientID(client rueidis.Client) string {
	if client.Mode() == rueidis.ClientModeStandalone {
		if nodes := client.Nodes(); len(nodes) == 1 {
			for addr := range nodes {
				if id, err := driver.AddrNodeID("tcp", addr); err == nil {
					return id
				}
			}
		}
	}
	return fmt.Sprintf("%T@%p", client, client)
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
