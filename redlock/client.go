package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/keytext"
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
	health  *quorum.Health // how each node's requests end, see skipped
	// inline is set when the one node's client returns by its ctx's
	// deadline (driver.DeadlineHonorer): its calls then run on the
	// calling goroutine.
	inline bool

	// calls counts the calls in progress and the goroutines of KeepAlive
	// and Close; requests, the requests of rounds, which may run on after
	// their call returned. Close waits for both.
	calls, requests quorum.Tracker
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
// fewer than a majority of real nodes grant a lock), or an option is
// invalid. Two nodes that reach one server unknown to New, as two redigo
// pools do, are found by the first round that reaches both (see
// [driver.ServerIdentifier]): that lock attempt, or Resume, fails with an
// error matching ErrInvalidArgument.
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
	nodes := make([]*scripts.Node, len(conns))
	for i, conn := range conns {
		nodes[i] = scripts.NewNode(conn)
	}
	health := quorum.NewHealth(len(nodes))
	// A CROSSSLOT refusal is the caller's mistake, not the node's (see
	// crossSlot).
	health.NodeFault = func(err error) bool { return !isCrossSlot(err) }
	c := &Client{nodes: nodes, cfg: cfg, health: health, closed: make(chan struct{})}
	if h, ok := conns[0].(driver.DeadlineHonorer); ok && len(conns) == 1 {
		c.inline = h.HonorsDeadline()
	}
	c.servers.init(nodes)
	return c, nil
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

// Resume takes over a lock acquired elsewhere, for example by another
// process, from its key and value ([Lock.Value]). It sets the TTL of the
// keys that still hold value to ttl on every node, exactly as Extend does,
// and returns a Lock valid from that round. The keys are never created: if
// a quorum of nodes no longer holds value, the error matches ErrNotHeld.
// When the round finds two nodes that reach one server (see New), the
// error matches ErrInvalidArgument and the keys keep the TTL it set.
//
// When a Lock that c handed out holds value on key and the program still
// refers to it, Resume extends that Lock, in its turn with its other extend
// rounds, and returns it (ErrReleased once it was unlocked); Resume calls
// of one value that run at once share one Lock the same way: two Locks of
// one value would each believe only their own rounds. Two processes must
// not use one value at once, for the same reason; and Resume of one key of
// a Lock of c over several keys fails with an error matching
// ErrInvalidArgument.
func (c *Client) Resume(ctx context.Context, key, value string, ttl time.Duration) (*Lock, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	if value == "" {
		return nil, invalidf("empty lock value")
	}
	req, err := c.newRequest([]string{key}, ttl)
	if err != nil {
		return nil, err
	}
	l := c.live.findOrAdd(value, key, func() *Lock {
		return newLock(c, req, value, 0, time.Time{}, c.order.lanes(req))
	})
	if l == nil {
		return nil, invalidf("value held by a Lock of this Client on %s among other keys", keytext.Quote(key))
	}
	if err := l.takeCallTurn(ctx); err != nil {
		return nil, err
	}
	defer l.endTurn()
	if err := l.extend(ctx, req); err != nil {
		var qe *QuorumError
		if errors.As(err, &qe) {
			if ce := c.crossSlot(req, qe.Errors); ce != nil {
				return nil, ce
			}
		}
		return nil, err
	}
	if err := c.sameServer(); err != nil {
		return nil, err
	}
	return l, nil
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
	if !c.calls.Enter() {
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
