package redlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/nodeset"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Client grants locks over a fixed set of independent Redis nodes. It is
// safe for concurrent use.
//
// A Client owns what outlives its calls: the requests that go on after a
// call returned (a call returns as soon as a quorum decided it), the
// renewals of [Lock.KeepAlive] and [Client.Do], and the subscriptions of
// Lock calls waiting for a release. [Client.Close] ends them and waits for
// them. The Conns given to New stay the caller's: close the Client first,
// then the Redis clients behind them.
type Client struct {
	nodes   []*scripts.Node
	cfg     config
	waits   releaseWaits
	live    liveLocks
	order   keyOrder
	servers serverCheck
	health  *quorum.Health // which nodes are behind, see skipped
	fails   nodeFailures   // which nodes are failing, and their last errors
	// inline is set when the one node's client returns by its ctx's
	// deadline (driver.DeadlineHonorer): its calls then run on the
	// calling goroutine.
	inline    bool
	everyNode []bool // all set: the Wait of a round that waits for every reply

	// calls counts the calls in progress and the goroutines of KeepAlive
	// and Close; requests, the requests of rounds, which may run on after
	// their call returned. Close waits for both.
	calls, requests tracker
	closed          chan struct{} // closed by Close: ends retry waits and renewals
	closing         sync.Once     // closes closed
	releasing       sync.Once     // releases the locks still held, once calls ended
}

// New returns a Client that grants a lock when a majority of conns grant
// it. Each Conn must reach an independent Redis node (a server, or a
// Cluster or Sentinel deployment addressed through one client); the
// majority is counted over len(conns), whether or not the nodes are
// reachable.
//
// New does no I/O. It reports an error matching ErrInvalidArgument when
// conns is empty, holds a nil Conn or the same node twice (which would let
// fewer than a majority of real nodes grant a lock), holds an even number
// of nodes without [WithEvenNodes], or an option is invalid. Two nodes
// that reach one server unknown to New, as two redigo pools do, are found
// by the first round that reaches both (see [driver.ServerIdentifier]):
// that lock attempt, or Resume, fails with an error matching
// ErrInvalidArgument.
func New(conns []driver.Conn, opts ...Option) (*Client, error) {
	if len(conns) == 0 {
		return nil, invalidf("no nodes given")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	switch f := nodeset.Check(conns); {
	case f == nil:
	case f.Kind == nodeset.NilConn:
		return nil, invalidf("node %d is a nil Conn", f.Node)
	case f.Kind == nodeset.SameConn:
		return nil, invalidf("node %d is the same Conn as node %d", f.Node, f.Other)
	default:
		return nil, invalidf("node %d talks to the same node as node %d (%s)", f.Node, f.Other, f.ID)
	}
	if n := len(conns); n%2 == 0 && !cfg.evenNodes {
		return nil, invalidf("%d nodes: %s; give an odd number of nodes, or WithEvenNodes(true)", n, evenTolerance(n))
	}
	nodes := make([]*scripts.Node, len(conns))
	for i, conn := range conns {
		nodes[i] = scripts.NewNode(conn)
	}
	c := &Client{
		nodes:     nodes,
		cfg:       cfg,
		health:    quorum.NewHealth(len(nodes)),
		fails:     newNodeFailures(len(nodes)),
		everyNode: slices.Repeat([]bool{true}, len(nodes)),
		closed:    make(chan struct{}),
	}
	if h, ok := conns[0].(driver.DeadlineHonorer); ok && len(conns) == 1 {
		c.inline = h.HonorsDeadline()
	}
	c.servers.init(nodes)
	return c, nil
}

// evenTolerance says how many failed nodes a quorum of an even number n
// of nodes tolerates, and that n-1 tolerate as many.
func evenTolerance(n int) string {
	q := quorum.Size(n)
	switch f := n - q; f {
	case 0:
		return fmt.Sprintf("a quorum of %d tolerates no failed node", q)
	case 1:
		return fmt.Sprintf("a quorum of %d tolerates 1 failed node, as %d nodes do", q, n-1)
	default:
		return fmt.Sprintf("a quorum of %d tolerates %d failed nodes, as %d nodes do", q, f, n-1)
	}
}

// Lock acquires a lock on the resource key for ttl, retrying as the
// RetryStrategy allows while the key is held elsewhere or too few nodes
// answer. The returned Lock is valid until [Lock.ValidUntil]; the holder
// must finish, Extend or stop using the resource before then.
//
// When no attempt succeeds it returns an error matching ErrNotAcquired,
// usually a *QuorumError describing the last attempt. When ctx ends first,
// the error also matches ctx.Err().
//
// Every failed attempt is released on all nodes, even when ctx was
// cancelled. One case is beyond any client's reach: a request that was
// still in flight when ctx ended or its node timed out can reach the node
// after the release; the key it sets then lives until its TTL runs out,
// like the key of a crashed client, and blocks no one after that.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, []string{key}, ttl, nil)
}

// TryLock makes a single attempt to acquire the lock on key for ttl,
// without retries. Errors are as for Lock.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, []string{key}, ttl, NoRetry())
}

// LockMulti acquires one lock over several resources, retrying like Lock.
// Each node grants all keys or none in one atomic script, so a partial
// overlap with another lock fails without touching any key. keys must be
// distinct and non-empty. On a Redis Cluster node all keys must hash to one
// slot: give them a common hash tag, as in "{order:42}:payment" and
// "{order:42}:stock". When a node refuses them for lying in different
// slots (CROSSSLOT), the call fails at once with an error matching
// ErrInvalidArgument, after releasing what the attempt set on the other
// nodes: the lock would otherwise run without that node's vote.
func (c *Client) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, keys, ttl, nil)
}

// TryLockMulti is LockMulti with a single attempt.
func (c *Client) TryLockMulti(ctx context.Context, keys []string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, keys, ttl, NoRetry())
}

// usable reports an error matching ErrInvalidArgument for a Client not
// made by New: a nil *Client, such as a failed New returns, or the zero
// value.
func (c *Client) usable() error {
	switch {
	case c == nil:
		return invalidf("nil *Client")
	case len(c.nodes) == 0:
		return invalidf("Client not made by New")
	}
	return nil
}

// enter checks a call of c and counts it for Close, until c.calls.Done. It
// returns ErrClosed once Close was called.
func (c *Client) enter(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	if !c.calls.enter() {
		return ErrClosed
	}
	return nil
}

func checkContext(ctx context.Context) error {
	if ctx == nil {
		return invalidf("nil Context")
	}
	return nil
}
