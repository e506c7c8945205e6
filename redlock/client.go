package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/nodeset"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Client grants locks over a fixed set of independent Redis nodes. It is
// safe for concurrent use and holds no resources of its own: the Conns
// given to New stay owned by the caller.
type Client struct {
	nodes []*scripts.Node
	cfg   config
	waits releaseWaits
	live  liveLocks
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
// invalid.
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
	return &Client{nodes: nodes, cfg: cfg}, nil
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
// Every failed attempt is released on all nodes that may hold it, even when
// ctx was cancelled. One case is beyond any client's reach: a request that
// was still in flight when ctx ended or its node timed out can reach the
// node after the release; the key it sets then lives until its TTL runs
// out, like the key of a crashed client, and blocks no one after that.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, []string{key}, ttl, c.cfg.retry)
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
// "{order:42}:stock".
func (c *Client) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, keys, ttl, c.cfg.retry)
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
//
// When a Lock that c handed out holds value on key and the program still
// refers to it, Resume extends that Lock, in its turn with its other extend
// rounds, and returns it (ErrReleased once it was unlocked): two Locks of
// one value would each believe only their own rounds. Two processes must
// not use one value at once, for the same reason.
func (c *Client) Resume(ctx context.Context, key, value string, ttl time.Duration) (*Lock, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if value == "" {
		return nil, invalidf("empty lock value")
	}
	req, err := c.newRequest([]string{key}, ttl)
	if err != nil {
		return nil, err
	}
	if l := c.live.find(value); l != nil && slices.Equal(l.names(), req.names) {
		if err := l.takeTurn(ctx, nil); err != nil {
			return nil, err
		}
		defer l.endTurn()
		if err := l.extend(ctx, req); err != nil {
			return nil, err
		}
		return l, nil
	}
	l := newLock(c, req, value, 0, time.Time{})
	l.turn <- struct{}{} // no one else knows l yet
	defer l.endTurn()
	if err := l.extend(ctx, req); err != nil {
		c.live.remove(l)
		return nil, err
	}
	return l, nil
}

// request is a validated set of keys and TTL with everything derived from
// them.
type request struct {
	names  []string // as given by the caller
	keys   []string // with the key prefix
	fenced []string // keys followed by their fencing counters, with WithFencing
	// extra holds the keys for custom scripts, with WithExtraKeys. It is
	// a pointer to keep request within the size that closures copy
	// rather than move to the heap.
	extra       *[]string
	ttl         time.Duration
	ttlArg      string // ttl in milliseconds, as sent to the nodes
	drift       time.Duration
	nodeTimeout time.Duration
}

func (c *Client) newRequest(names []string, ttl time.Duration) (request, error) {
	if len(names) == 0 {
		return request{}, invalidf("no keys given")
	}
	for i, name := range names {
		if name == "" {
			return request{}, invalidf("empty key")
		}
		for _, prev := range names[:i] {
			if prev == name {
				return request{}, invalidf("key %q given twice", name)
			}
		}
	}
	if ttl < time.Millisecond {
		return request{}, invalidf("ttl %v is below the 1ms resolution of key expiry", ttl)
	}
	// Nodes keep expiry in whole milliseconds; the lock's validity is
	// computed from the TTL the nodes actually get.
	ttl = ttl.Truncate(time.Millisecond)
	drift := quorum.Drift(ttl, c.cfg.driftFactor)
	if drift >= ttl {
		return request{}, invalidf("ttl %v leaves no validity after the clock-drift allowance of %v", ttl, drift)
	}
	nodeTimeout := c.cfg.nodeTimeout
	if !c.cfg.nodeTimeoutSet {
		nodeTimeout = min(time.Duration(float64(ttl)*DefaultNodeTimeoutFraction), DefaultNodeTimeoutMax)
	}
	if nodeTimeout >= ttl {
		return request{}, invalidf("node timeout %v is not below the ttl %v", nodeTimeout, ttl)
	}
	keys := names
	if c.cfg.keyPrefix != "" {
		keys = make([]string, len(names))
		for i, name := range names {
			keys[i] = c.cfg.keyPrefix + name
		}
	}
	var fenced []string
	if c.cfg.fencing {
		var err error
		if fenced, err = fencedKeys(keys); err != nil {
			return request{}, err
		}
	}
	extra, err := c.cfg.extraKeysOf(keys)
	if err != nil {
		return request{}, err
	}
	return request{
		names:       names,
		keys:        keys,
		fenced:      fenced,
		extra:       extra,
		ttl:         ttl,
		ttlArg:      strconv.FormatInt(ttl.Milliseconds(), 10),
		drift:       drift,
		nodeTimeout: nodeTimeout,
	}, nil
}

func checkContext(ctx context.Context) error {
	if ctx == nil {
		return invalidf("nil Context")
	}
	return nil
}

func (c *Client) lock(ctx context.Context, names []string, ttl time.Duration, retry RetryStrategy) (l *Lock, err error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	req, err := c.newRequest(names, ttl)
	if err != nil {
		return nil, err
	}
	trace := c.cfg.obs.startLock(ctx, req, len(c.nodes))
	if trace != nil {
		defer func() { trace.done(l, err) }()
	}
	var w *waiter // made at the first wait
	defer func() { w.leave() }()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		}
		trace.attemptStart(attempt)
		l, err := c.attempt(ctx, req, trace)
		if err == nil {
			return l, nil
		}
		var qe *QuorumError
		if !errors.As(err, &qe) {
			return nil, err
		}
		qe.Attempts = attempt
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", qe, ctx.Err())
		}
		delay, ok := retry.NextDelay(attempt)
		if !ok {
			return nil, qe
		}
		if w == nil {
			w = &waiter{client: c}
		}
		if !w.wait(ctx, req, delay) {
			return nil, fmt.Errorf("%w: %w", qe, ctx.Err())
		}
	}
}

// attempt makes one round of acquire requests with a fresh value.
func (c *Client) attempt(ctx context.Context, req request, trace *lockTrace) (*Lock, error) {
	value, err := c.cfg.newValue()
	if err != nil {
		return nil, fmt.Errorf("redlock: generating a lock value: %w", err)
	}
	if value == "" {
		return nil, fmt.Errorf("redlock: the value generator returned an empty value")
	}
	if c.cfg.fencing {
		return c.attemptFenced(ctx, req, value, trace)
	}
	args := []string{value, req.ttlArg}
	start := time.Now()
	results := c.runScript(ctx, c.cfg.acquire, req, args)
	validity := quorum.Validity(req.ttl, time.Since(start), req.drift)
	v := countVotes(results, isOne)
	granted := quorum.Granted(v.granted, len(c.nodes), validity)
	trace.attemptDone(start, value, v, validity, granted)
	if granted {
		return newLock(c, req, value, 0, start), nil
	}
	c.cleanup(ctx, req, value, results)
	return nil, c.failure("lock", req, v, validity)
}

// cleanup releases a failed attempt's keys on every node that may hold
// them: all but those that refused, since a refusal means the script ran and
// wrote nothing. It is detached from ctx's cancellation so that a caller
// giving up leaves nothing behind.
func (c *Client) cleanup(ctx context.Context, req request, value string, results []result) {
	var pending []int
	for i, r := range results {
		if r.err != nil || r.reply != int64(0) {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return
	}
	release := c.cfg.release
	input, args := c.scriptInput(release, req, []string{value})
	quorum.FanOut(context.WithoutCancel(ctx), len(pending), req.nodeTimeout, func(ctx context.Context, i int) {
		c.nodes[pending[i]].Run(ctx, release.script, input.keys, args)
	})
}

// result is one node's answer in a round.
type result struct {
	reply any
	err   error
}

// round runs script on every node at once, each bounded by the per-node
// timeout.
func (c *Client) round(ctx context.Context, script *scripts.Script, req request, args []string) []result {
	results := make([]result, len(c.nodes))
	quorum.FanOut(ctx, len(c.nodes), req.nodeTimeout, func(nodeCtx context.Context, i int) {
		reply, err := c.nodes[i].Run(nodeCtx, script, req.keys, args)
		if err != nil && ctx.Err() == nil && timedOut(nodeCtx) {
			// Keep the driver's words but not its error chain, which
			// would make the round look like the caller's own
			// deadline passed.
			err = fmt.Errorf("%w (%v)", ErrNodeTimeout, err)
		}
		if err != nil && strings.Contains(err.Error(), "CROSSSLOT") {
			err = fmt.Errorf("keys of one lock must share a Redis Cluster hash slot; give them a common hash tag, as in {order:42}:payment and {order:42}:stock: %w", err)
		}
		results[i] = result{reply: reply, err: err}
	})
	return results
}

// timedOut reports whether a node's context has reached its deadline. A
// client that turns the deadline into a socket timeout can fail a moment
// before the context itself reports it, so the clock is checked too.
func timedOut(nodeCtx context.Context) bool {
	if errors.Is(nodeCtx.Err(), context.DeadlineExceeded) {
		return true
	}
	deadline, ok := nodeCtx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// votes is the count of a round's answers.
type votes struct {
	granted, refused int
	errs             []*NodeError
}

// countVotes counts a round's answers. granted tells whether a reply is a
// yes; any other integer is a refusal and anything else a node error.
func countVotes(results []result, granted func(any) bool) votes {
	var v votes
	for i, r := range results {
		switch {
		case r.err != nil:
			v.errs = append(v.errs, &NodeError{Node: i, Err: r.err})
		case granted(r.reply):
			v.granted++
		default:
			if _, ok := r.reply.(int64); ok {
				v.refused++
			} else {
				v.errs = append(v.errs, &NodeError{Node: i, Err: fmt.Errorf("unexpected reply %#v", r.reply)})
			}
		}
	}
	return v
}

// failure describes a round that did not grant what op asked for.
func (c *Client) failure(op string, req request, v votes, validity time.Duration) *QuorumError {
	return &QuorumError{
		Op:       op,
		Keys:     req.names,
		Nodes:    len(c.nodes),
		Quorum:   quorum.Size(len(c.nodes)),
		Granted:  v.granted,
		Refused:  v.refused,
		Validity: validity,
		Errors:   v.errs,
	}
}

func isOne(reply any) bool { return reply == int64(1) }
