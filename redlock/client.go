package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/nodeset"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// Client grants locks over a fixed set of independent Redis nodes. It is
// safe for concurrent use and holds no resources of its own: the Conns
// given to New stay owned by the caller.
type Client struct {
	nodes    []*scripts.Node
	cfg      config
	waits    releaseWaits
	live     liveLocks
	order    keyOrder
	servers  serverCheck
	requests quorum.Tracker // requests still running, see Wait
	health   *quorum.Health // how each node's requests end, see skipped
	// inline is set when the one node's client returns by its ctx's
	// deadline (driver.DeadlineHonorer): its calls then run on the
	// calling goroutine.
	inline bool
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
	c := &Client{nodes: nodes, cfg: cfg, health: health}
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
// not use one value at once, for the same reason.
func (c *Client) Resume(ctx context.Context, key, value string, ttl time.Duration) (*Lock, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
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
	l := c.live.findOrAdd(value, req.names, func() *Lock {
		return newLock(c, req, value, 0, time.Time{}, c.order.lanes(req))
	})
	if err := l.takeTurn(ctx, nil); err != nil {
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

// request is a validated set of keys and TTL with everything derived from
// them.
type request struct {
	names  []string // as given by the caller
	keys   []string // with the key prefix
	fenced []string // keys followed by their fencing counters, with WithFencing
	// extra holds the keys for custom scripts, with Scripts.ExtraKeys. It is
	// a pointer to keep request within the size that closures copy
	// rather than move to the heap.
	extra       *[]string
	ttl         time.Duration
	ttlArg      string // ttl in milliseconds, as sent to the nodes
	drift       time.Duration
	nodeTimeout time.Duration
	// every is set when the scripts get several keys, which a Redis
	// Cluster node may refuse for lying in different hash slots: such a
	// refusal fails the call (crossSlot), so its rounds wait for the
	// reply of every node.
	every bool
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
				return request{}, invalidf("key %s given twice", keytext.Quote(name))
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
		nodeTimeout = min(max(time.Duration(float64(ttl)*defaultNodeTimeoutFraction), defaultNodeTimeoutMin), defaultNodeTimeoutMax)
	}
	// A round waits up to the node timeout for a node that does not
	// answer: with no validity left after that, one such node would fail
	// every lock.
	if quorum.Validity(ttl, nodeTimeout, drift) <= 0 {
		return request{}, invalidf("ttl %v leaves no validity after the clock-drift allowance of %v and the node timeout of %v", ttl, drift, nodeTimeout)
	}
	keys := names
	if c.cfg.keyPrefix != "" {
		keys = make([]string, len(names))
		for i, name := range names {
			keys[i] = c.cfg.keyPrefix + name
		}
	}
	for _, key := range keys {
		if strings.HasSuffix(key, fenceSuffix) {
			return request{}, invalidf("key %s ends in %q, reserved for fencing counters", keytext.Quote(key), fenceSuffix)
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
		every:       len(keys) > 1 || (extra != nil && c.cfg.anyCustomScript()),
	}, nil
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

func checkContext(ctx context.Context) error {
	if ctx == nil {
		return invalidf("nil Context")
	}
	return nil
}

// lock acquires names for ttl, retrying as retry allows; a nil retry is
// the Client's strategy, read only once c is known to be usable.
func (c *Client) lock(ctx context.Context, names []string, ttl time.Duration, retry RetryStrategy) (l *Lock, err error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if retry == nil {
		retry = c.cfg.retry
	}
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
	defer func() { w.leave(l != nil) }()
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
			return nil, withContextError(qe, ctx.Err())
		}
		delay, ok := retry.NextDelay(attempt)
		if !ok {
			return nil, qe
		}
		if w == nil {
			w = &waiter{client: c}
		}
		if !w.wait(ctx, req, delay) {
			return nil, withContextError(qe, ctx.Err())
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
	lanes := c.order.lanes(req)
	start := time.Now()
	results := c.runScript(ctx, c.cfg.acquire, req, args, lanes, c.skipped(req), true, isOne)
	validity := quorum.Validity(req.ttl, time.Since(start), req.drift)
	v := countVotes(results, isOne)
	if err := c.sameServer(); err != nil {
		trace.attemptDone(start, value, v, validity, false)
		c.cleanup(ctx, req, value, lanes, results, refusedBy(results, isOne))
		return nil, err
	}
	crossSlot := c.crossSlot(req, v.errs)
	granted := crossSlot == nil && quorum.Granted(v.granted, len(c.nodes), validity)
	trace.attemptDone(start, value, v, validity, granted)
	if granted {
		return c.live.add(newLock(c, req, value, 0, start, lanes)), nil
	}
	c.cleanup(ctx, req, value, lanes, results, refusedBy(results, isOne))
	if crossSlot != nil {
		return nil, crossSlot
	}
	return nil, c.failure(observe.OpLock, req, v, validity)
}

// cleanup releases a failed attempt's keys on every node, whatever each
// answered: a node that refused may still hold them, set by an earlier run
// of the same request that a Redis client re-sent, and the release is
// value-checked, so it never touches another owner's key. Each release
// follows the attempt's request on its node (lanes), so that a grant
// arriving late is released too.
//
// A release that fails on a node that may hold the keys, one not among
// those that refused the attempt (refused, see refusedBy), is sent again
// (releaseAgain), unless the node is failing or refused it as a CROSSSLOT
// mistake, which nothing set. Keys left behind would refuse every lock on
// them, this Client's next attempt included, for the rest of the TTL;
// under contention, on nodes whose faults come and go, each attempt
// failing on them would leave more.
//
// cleanup returns once the nodes that had answered the attempt (in
// results, not with a node timeout) have answered the release, sent again
// where it failed, and the others' releases go on in the background. A
// release sent again is thus no straggler, which would make its node look
// behind (see skipped), and the node's failures are counted by the time
// the attempt returns. It is detached from ctx's cancellation so that a
// caller giving up leaves nothing behind.
func (c *Client) cleanup(ctx context.Context, req request, value string, lanes *quorum.Lanes, results []result, refused []bool) {
	release := c.cfg.release
	input, args := c.scriptInput(release, req, []string{value})
	answered := make([]bool, len(results))
	for i, r := range results {
		// A node that did not answer within the node timeout, whether the
		// round or its call ended first, is not waited for again.
		answered[i] = r.Err != quorum.ErrPending && !errors.Is(r.Err, ErrNodeTimeout)
	}
	round := quorum.Round{
		Nodes:   len(c.nodes),
		Timeout: req.nodeTimeout,
		Wait:    answered,
		Lanes:   lanes,
		Tracker: &c.requests,
		Inline:  c.inline,
		Health:  c.health,
		Call: func(ctx context.Context, i int) result {
			run := func() (any, error) { return c.nodes[i].Run(ctx, release.script, input.keys, args) }
			reply, err := run()
			if err != nil && !refused[i] && !c.health.Failed(i) && !isCrossSlot(err) {
				reply, err = releaseAgain(ctx, run, err)
			}
			return result{Value: reply, Err: err}
		},
	}
	round.Run(context.WithoutCancel(ctx))
}

// refusedBy returns the nodes that refused a round: those whose reply is a
// number that granted says is no grant, as countVotes counts them. They do
// not hold its keys, unless a Redis client re-sent an earlier request of
// the same value. A node that failed, answered something else or had not
// answered when the round returned may hold them.
func refusedBy(results []result, granted func(any) bool) []bool {
	refused := make([]bool, len(results))
	for i, r := range results {
		_, number := r.Value.(int64)
		refused[i] = r.Err == nil && number && !granted(r.Value)
	}
	return refused
}

// releaseRetries is how many times a failed release is sent again, and
// releaseRetryPause the pause before the first of them; each later pause
// doubles the one before. A node whose fault lasts longer than these few
// milliseconds keeps the keys until they expire. A release is not sent
// again to a node whose last requests all failed (quorum.Health.Failed),
// one that refuses connections say: it would fail again.
const (
	releaseRetries    = 3
	releaseRetryPause = time.Millisecond
)

// releaseAgain sends a release that failed with err again, up to
// releaseRetries times after pauses that start at releaseRetryPause and
// double, until it is answered or ctx, the node's call context, ends. It
// returns the last try's reply and error. Sending a release again is safe
// whatever the failed try did on the node, since a release deletes only
// keys that hold the attempt's value.
func releaseAgain(ctx context.Context, run func() (any, error), err error) (any, error) {
	var reply any
	pause := releaseRetryPause
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for try := 0; err != nil && try < releaseRetries; try++ {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return reply, err
		}
		reply, err = run()
		pause *= 2
		timer.Reset(pause)
	}
	return reply, err
}

// result is one node's answer in a round.
type result = quorum.Reply

// round runs script on every node at once, each bounded by the per-node
// timeout, after the earlier requests of lanes on that node, except on the
// nodes of skip and those whose lane carries no request (their reply is
// ErrNodeSkipped). It returns as soon as yes holds for a quorum of the
// replies or can no longer hold for one, unless every reply matters (see
// request.every) or, in a round with learn set (one after which
// sameServer compares the nodes' server IDs), a node's server ID is still
// to learn (see unknownServers); a node that had not answered by then has
// quorum.ErrPending, wrapped in a *nodeTimeoutError when the round ended
// at the per-node timeout.
func (c *Client) round(ctx context.Context, script *scripts.Script, req request, args []string, lanes *quorum.Lanes, skip []bool, learn bool, yes func(any) bool) []result {
	round := quorum.Round{
		Nodes:   len(c.nodes),
		Timeout: req.nodeTimeout,
		Every:   req.every || c.cfg.waitEvery,
		Lanes:   lanes,
		Skip:    skip,
		Health:  c.health,
		Tracker: &c.requests,
		Inline:  c.inline,
		Yes:     func(r result) bool { return r.Err == nil && yes(r.Value) },
		Call: func(nodeCtx context.Context, i int) result {
			reply, err := c.nodes[i].Run(nodeCtx, script, req.keys, args)
			if err != nil && ctx.Err() == nil && timedOut(nodeCtx) {
				err = &nodeTimeoutError{timeout: req.nodeTimeout, driverErr: err}
			}
			return result{Value: reply, Err: err}
		},
	}
	if learn {
		round.Wait = c.unknownServers()
	}
	start := time.Now()
	results := round.Run(ctx)
	timedOut := ctx.Err() == nil && time.Since(start) >= req.nodeTimeout
	for i, r := range results {
		switch {
		case r.Err == quorum.ErrNotSent:
			results[i].Err = ErrNodeSkipped
		case r.Err == quorum.ErrPending && timedOut:
			results[i].Err = &nodeTimeoutError{timeout: req.nodeTimeout, driverErr: r.Err}
		}
	}
	return results
}

// skipped returns the nodes that an acquire of req is not sent to, nil
// for none, at most as many as leave a quorum: those behind the others,
// whose requests are still running lagLimit after their rounds returned
// without them, or were and have not answered a probe within it since,
// and those failing, whose last requests all failed and
// which are not due a probe (quorum.Health). A node behind would hardly
// answer in time, and each request sent to it would wait behind the
// others, adding load to a node that cannot keep up; a failing node, one
// that refuses connections say, would fail it, at the cost of a dial or
// more. The lock's extends and releases skip the node too (quorum.Lanes).
func (c *Client) skipped(req request) []bool {
	if c.cfg.skipAlways != nil {
		return c.cfg.skipAlways
	}
	n := len(c.nodes)
	spare := n - quorum.Size(n)
	if !c.cfg.skipUnhealthy || spare == 0 || req.every {
		// A request whose keys may lie in different hash slots goes to
		// every node, so that any Cluster node's CROSSSLOT refusal is
		// seen (see crossSlot).
		return nil
	}
	// The failing nodes first, then those behind: a request sent to a
	// failing node fails, while one sent to a node behind may still be
	// answered in time. Each node is asked once whether it is behind, and
	// Failing, which may grant the node its probe, only of a node that is
	// not: a probe granted must be sent.
	limit := lagLimit(req.nodeTimeout)
	var buf [8]bool
	behind := buf[:0]
	for i := range n {
		behind = append(behind, c.health.Behind(i, limit))
	}
	var skip []bool
	mark := func(i int) {
		if skip == nil {
			skip = make([]bool, n)
		}
		skip[i] = true
		spare--
	}
	for i := 0; i < n && spare > 0; i++ {
		if behind[i] && c.health.Failed(i) || !behind[i] && c.health.Failing(i, req.nodeTimeout) {
			mark(i)
		}
	}
	for i := 0; i < n && spare > 0; i++ {
		if behind[i] && (skip == nil || !skip[i]) {
			mark(i)
		}
	}
	return skip
}

// Wait returns once no request that c sent is running, or with ctx.Err()
// when ctx ends first. A call returns as soon as its outcome is decided,
// and its requests to the nodes that had not answered go on in the
// background, each until its node answers or the per-node timeout passes;
// Wait is for programs and tests that must see them end, for example
// before checking the nodes' keys.
func (c *Client) Wait(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	return c.requests.Wait(ctx)
}

// lagLimit is how long a node's request may run on after its round
// returned before the node counts as behind: a tenth of the per-node
// timeout, and at least defaultNodeTimeoutMin, since on a busy host the
// goroutine that reads a healthy node's reply may wait that long for a
// CPU. A tenth finds a node that turned slow before the requests sent to
// it meanwhile fill its client's pool (10 ms at a 2 s TTL); a node found
// behind by mistake costs a probe answered in time (quorum.Health).
func lagLimit(nodeTimeout time.Duration) time.Duration {
	return max(nodeTimeout/10, defaultNodeTimeoutMin)
}

// isCrossSlot reports whether err is a Redis Cluster node's refusal of a
// request whose keys lie in different hash slots. Redis starts that error
// reply with CROSSSLOT, and no driver gives it a type of its own, so the
// text is the only signal; this is the one place that reads it.
func isCrossSlot(err error) bool {
	return err != nil && strings.Contains(err.Error(), "CROSSSLOT")
}

// crossSlot returns an error matching ErrInvalidArgument when one of errs
// is a CROSSSLOT refusal of the keys of req, and nil otherwise. Such a
// refusal is the caller's mistake, not a node fault: counted as a failed
// node, it would let a lock run on the other nodes with less fault
// tolerance than configured, so the call fails instead.
func (c *Client) crossSlot(req request, errs []*NodeError) error {
	for _, ne := range errs {
		if !isCrossSlot(ne.Err) {
			continue
		}
		keys := req.keys
		if req.extra != nil && c.cfg.anyCustomScript() {
			keys = append(keys[:len(keys):len(keys)], *req.extra...)
		}
		return fmt.Errorf("%w: keys %s lie in different Redis Cluster hash slots; give them a common hash tag, as in {order:42}:payment and {order:42}:stock: %w",
			ErrInvalidArgument, keytext.QuoteAll(keys), ne)
	}
	return nil
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
	pending          int // nodes that had not answered when the round was decided
	errs             []*NodeError
}

// uncertain reports whether the outcome of the round's request is unknown
// on some node: one had not answered, or failed in a way that leaves open
// whether the request was applied. A request that was never sent is not
// one of them.
func (v votes) uncertain() bool {
	return v.pending > 0 || len(v.errs) > unsent(v.errs)
}

// unsent counts the nodes of errs that the request was not sent to
// (ErrNodeSkipped): they cannot hold the lock, like the nodes that refused.
func unsent(errs []*NodeError) int {
	n := 0
	for _, ne := range errs {
		if ne.Err == ErrNodeSkipped {
			n++
		}
	}
	return n
}

// countVotes counts a round's answers. granted tells whether a reply is a
// yes; any other integer is a refusal and anything else a node error.
func countVotes(results []result, granted func(any) bool) votes {
	var v votes
	for i, r := range results {
		switch {
		case r.Err == quorum.ErrPending:
			v.pending++
		case r.Err != nil:
			v.errs = append(v.errs, &NodeError{Node: i, Err: r.Err})
		case granted(r.Value):
			v.granted++
		default:
			if _, ok := r.Value.(int64); ok {
				v.refused++
			} else {
				v.errs = append(v.errs, &NodeError{Node: i, Err: fmt.Errorf("unexpected reply %#v", r.Value)})
			}
		}
	}
	return v
}

// failure describes a round that did not grant what op asked for.
func (c *Client) failure(op observe.Op, req request, v votes, validity time.Duration) *QuorumError {
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
