package quorum

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

// ErrPending is the error of a node that had not answered when its round
// returned: the others had decided it, the timeout had passed or ctx had
// ended. Its request may still be running and may still be applied.
var ErrPending = errors.New("no reply yet when the round ended")

// Reply is one node's answer in a round.
type Reply struct {
	Value any
	Err   error
}

// Round sends one request to every node at once and returns as soon as
// its outcome is decided: when Yes holds for a quorum of the replies, or
// when so many replies are not a yes that no quorum can be reached. The
// requests of the nodes that had not answered by then go on in the
// background, each bounded by Timeout; their replies are discarded.
//
// A Round is used once, by one call of Run.
type Round struct {
	Nodes   int
	Timeout time.Duration
	// Call sends the request to node and returns its reply. Calls for
	// distinct nodes run at once, on distinct goroutines.
	Call func(ctx context.Context, node int) Reply
	// Yes reports whether a reply votes for the outcome the round asks
	// for. It is nil for a round that counts no votes (see Wait).
	Yes func(Reply) bool
	// Every makes the round wait for the reply of every node, whatever
	// the votes: for requests whose every reply matters to the caller.
	Every bool
	// Wait, when not nil, makes the round return once every node i with
	// Wait[i] has answered, whatever the votes.
	Wait []bool
	// Lanes, when not nil, orders this round's request on each node
	// after the previous round's with the same Lanes.
	Lanes *Lanes
	// Tracker, when not nil, counts the round's requests while they run.
	Tracker *Tracker
	// Skip, when not nil, names the nodes that the request is not sent
	// to: their reply is ErrNotSent, a vote against, and with Lanes no
	// later request of the same Lanes is sent to them either.
	Skip []bool
	// Lag, when not nil, records the requests that are still running
	// when the round returns (see Lag). It must be made for Nodes nodes.
	Lag *Lag
}

// roundState is what the node goroutines of a round share.
type roundState struct {
	mu        sync.Mutex
	replies   []Reply
	answered  []bool
	yes, no   int // answers that vote for the outcome, and the others
	waiting   int // nodes of Round.Wait that have not answered
	remaining int // node goroutines still running
	decided   bool
	done      chan struct{} // closed once decided
	// stragglers holds, for each node that had not answered when the
	// round returned, its record in Round.Lag (added set).
	stragglers []straggler
}

// Run runs the round and returns every node's reply, in node order, as
// they were when the round returned. A node that had not answered has
// ErrPending. Run also returns when timeout has passed or ctx has ended,
// even if an adapter does not honour its context.
//
// With several nodes, each call gets a context that ends when Timeout has
// passed since Run started, whatever becomes of ctx (its values are kept):
// one that only its deadline ends (see adapter.WithTimeout), cancelled only
// after every call has returned, which may be after Run returns: the
// driver package documents this as part of the Conn contract. The call of
// a single node gets ctx with the timeout.
func (r *Round) Run(ctx context.Context) []Reply {
	if r.Nodes == 0 {
		return nil
	}
	// The requests are detached from ctx's cancellation: a caller that
	// cancels ctx once the round returned (a deferred cancel, typically)
	// must not cut short the requests still on their way, each bounded by
	// Timeout. The round itself returns as soon as ctx ends. A single
	// node's call runs on the calling goroutine and decides the round
	// alone, so it keeps ctx's cancellation.
	parent := ctx
	if r.Nodes > 1 {
		parent = context.WithoutCancel(ctx)
	}
	nodeCtx, cancel := adapter.WithTimeout(parent, r.Timeout)
	s := &roundState{
		replies:   make([]Reply, r.Nodes),
		answered:  make([]bool, r.Nodes),
		remaining: r.Nodes,
		done:      make(chan struct{}),
	}
	for _, w := range r.Wait {
		if w {
			s.waiting++
		}
	}
	// Each node's request either is sent, after the previous request of
	// its lane, or is not: skipped now or on an earlier round of the
	// lanes. The Tracker counts only those sent.
	type order struct {
		prev <-chan struct{}
		done chan struct{}
		sent bool
	}
	lanes := make([]order, r.Nodes)
	sent := 0
	for node := range lanes {
		skip := node < len(r.Skip) && r.Skip[node]
		ln := order{sent: !skip}
		if r.Lanes != nil {
			ln.prev, ln.done, ln.sent = r.Lanes.enter(r.Nodes, node, skip)
		}
		if ln.sent {
			sent++
		}
		lanes[node] = ln
	}
	if r.Tracker != nil {
		r.Tracker.add(sent)
	}
	for node, ln := range lanes {
		if !ln.sent {
			if r.record(s, node, Reply{Err: ErrNotSent}) {
				cancel()
			}
			continue
		}
		if r.Nodes == 1 {
			// The one node decides the round: its call runs on the
			// calling goroutine, bounded by its context.
			r.node(parent, nodeCtx, cancel, s, node, ln.prev, ln.done)
			break
		}
		go r.node(parent, nodeCtx, cancel, s, node, ln.prev, ln.done)
	}
	// The round returns when Timeout has passed (nodeCtx) or ctx ends,
	// even if a call has not.
	cut := false // by the caller's ctx, before the nodes had their time
	select {
	case <-s.done:
	case <-nodeCtx.Done():
	case <-ctx.Done():
		cut = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided = true
	replies := make([]Reply, r.Nodes)
	var now time.Time
	for i := range replies {
		if s.answered[i] {
			replies[i] = s.replies[i]
			continue
		}
		replies[i] = Reply{Err: ErrPending}
		// A request outlives a round that the others decided, or that
		// timed out with it; one that the caller cut short is not behind
		// anything.
		if r.Lag != nil && !cut {
			if s.stragglers == nil {
				s.stragglers = make([]straggler, r.Nodes)
				now = r.Lag.now()
			}
			s.stragglers[i].since = now
			s.stragglers[i].added = true
			r.Lag.add(i, &s.stragglers[i])
		}
	}
	return replies
}

// after waits until prev is closed and reports whether it was, rather
// than ctx ending first.
func after(ctx context.Context, prev <-chan struct{}) bool {
	select {
	case <-prev:
		return true
	case <-ctx.Done():
		return false
	}
}

// node runs the request of one node, after the previous request of its
// lane, and records the reply.
//
// A request that waited for the previous one of its lane gets the whole
// Timeout from the moment it is sent: the wait, bounded by the round's
// Timeout, would otherwise leave it too little time to be sent at all (a
// release after an extension that a slow node took long to answer). So a
// request may run until twice Timeout after its round started.
func (r *Round) node(parent, ctx context.Context, cancel context.CancelFunc, s *roundState, node int, prev <-chan struct{}, done chan struct{}) {
	reply := Reply{Err: ctx.Err()}
	switch {
	case prev == nil:
		reply = r.Call(ctx, node)
	case after(ctx, prev):
		callCtx, cancelCall := adapter.WithTimeout(parent, r.Timeout)
		reply = r.Call(callCtx, node)
		cancelCall()
	}
	if done != nil {
		close(done)
	}
	if r.record(s, node, reply) {
		cancel()
	}
	if r.Tracker != nil {
		r.Tracker.done()
	}
}

// record records the reply of node, closes s.done if it decides the
// round, ends the node's straggler record if the round had returned
// without it, and reports whether it was the last reply of the round.
func (r *Round) record(s *roundState, node int, reply Reply) (last bool) {
	s.mu.Lock()
	s.replies[node], s.answered[node] = reply, true
	if r.Yes != nil && r.Yes(reply) {
		s.yes++
	} else {
		s.no++
	}
	if r.Wait != nil && node < len(r.Wait) && r.Wait[node] {
		s.waiting--
	}
	s.remaining--
	last = s.remaining == 0
	if !s.decided && r.settled(s) {
		s.decided = true
		close(s.done)
	}
	var st *straggler
	if s.stragglers != nil && s.stragglers[node].added {
		st = &s.stragglers[node]
	}
	s.mu.Unlock()
	if st != nil {
		r.Lag.end(node, st)
	}
	return last
}

// settled reports whether the answers so far decide the round. The caller
// holds s.mu.
func (r *Round) settled(s *roundState) bool {
	switch {
	case s.remaining == 0:
		return true
	case r.Every:
		return false
	case r.Wait != nil:
		return s.waiting == 0
	case r.Yes == nil:
		return false
	}
	return Decided(r.Nodes, s.yes, s.no)
}

// Lanes orders requests on each node: a request of a round run with some
// Lanes is sent to its node only once the request of the previous such
// round on that node has returned. The rounds of one lock share Lanes, so
// that a node applies them in the order they were made even when a round
// returns before that node answers. The zero value is ready to use and
// safe for concurrent use.
//
// A lane whose first request was not sent (Round.Skip) stays closed: no
// later request of the Lanes is sent on it, since its node never received
// what they would follow.
type Lanes struct {
	mu    sync.Mutex
	lanes []lane // per node
}

type lane struct {
	last   chan struct{} // closed when the lane's last request returned; nil before the first
	closed bool          // the lane's first request was not sent
}

// enter returns whether a new request on node is sent (not when skip is
// set or the lane is closed) and, if it is, a channel closed when the
// previous request on node has returned (nil when there was none, or it
// has) and the channel that the new request closes when it returns. A
// skip on a lane that already carried a request is ignored: that request
// may have reached the node, so what follows it is sent too.
func (l *Lanes) enter(nodes, node int, skip bool) (prev <-chan struct{}, done chan struct{}, sent bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lanes == nil {
		l.lanes = make([]lane, nodes)
	}
	ln := &l.lanes[node]
	if ln.closed || (skip && ln.last == nil) {
		ln.closed = true
		return nil, nil, false
	}
	done = make(chan struct{})
	if p := ln.last; p != nil {
		select {
		case <-p:
		default:
			prev = p
		}
	}
	ln.last = done
	return prev, done, true
}

// Tracker counts the requests of rounds that are still running, including
// those that go on after their round returned. The zero value is ready to
// use and safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to 0; nil while 0
}

func (t *Tracker) add(n int) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == 0 {
		t.idle = make(chan struct{})
	}
	t.running += n
}

func (t *Tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if t.running == 0 {
		close(t.idle)
		t.idle = nil
	}
}

// Wait returns nil once no request counted by t is running, or ctx.Err()
// when ctx ends first.
func (t *Tracker) Wait(ctx context.Context) error {
	t.mu.Lock()
	idle := t.idle
	t.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
