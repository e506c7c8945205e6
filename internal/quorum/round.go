package quorum

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/callctx"
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
	// Wait, when not nil, makes the round wait for the reply of every
	// node i with Wait[i]: in a round that counts no votes (Yes nil), the
	// round returns once they have answered, whatever the other nodes
	// do; in one that counts votes, it returns once they have answered
	// and the votes decide it.
	Wait []bool
	// Lanes, when not nil, orders this round's request on each node
	// after the previous round's with the same Lanes.
	Lanes *Lanes
	// Tracker, when not nil, counts the round's requests while they run.
	Tracker *Tracker
	// Workers, when not nil, runs the requests of a round on several
	// nodes; without it each runs on a goroutine of its own.
	Workers *Workers
	// Skip, when not nil, names the nodes that the request is not sent
	// to: their reply is ErrNotSent, a vote against, and with Lanes no
	// later request of the same Lanes is sent to them either.
	Skip []bool
	// Health, when not nil, records how each request sent ends, and
	// those that are still running when the round returns (see Health).
	// It must be made for Nodes nodes.
	Health *Health

	state roundState // in the Round, which is used once, to save an allocation
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
	cut       bool          // the caller's ctx ended the round before its nodes had their time
	unwaited  bool          // the calls run on goroutines the round does not wait for
	track     tracked       // the round's entry in Round.Tracker, and when its requests are overdue
	done      chan struct{} // closed once decided
	// stragglers holds, for each node that had not answered when the
	// round returned, its record in Round.Health (added set).
	stragglers []straggler
	// The backing arrays of replies, answered, the lanes' order and the
	// workers' tasks for rounds of up to inlineNodes nodes, which then
	// need no allocations of their own.
	replyBuf  [inlineNodes]Reply
	answerBuf [inlineNodes]bool
	orderBuf  [inlineNodes]order
	taskBuf   [inlineNodes]task
	// What the requests of the round share (see Round.node): the parent
	// and node contexts of Run, the cancel of the latter, and each node's
	// order.
	parent, ctx context.Context
	cancel      context.CancelFunc
	lanes       []order
}

// order is how one node's request of a round is sent: after prev and
// more, when not nil, closing done when it returns; or not at all (sent
// false).
type order struct {
	prev <-chan struct{}
	more []<-chan struct{}
	done chan struct{}
	sent bool
}

// inlineNodes is the largest number of nodes whose replies roundState
// holds without allocating them apart.
const inlineNodes = 5

// Run runs the round and returns every node's reply, in node order, as
// they were when the round returned. A node that had not answered has
// ErrPending. Run also returns when Timeout has passed or ctx has ended,
// even if an adapter does not honour its context, except in a round of a
// single node whose reply it waits for: that call runs on the calling
// goroutine, and Run returns when it does.
//
// Otherwise each call gets a context that ends when Timeout has passed
// since Run started, whatever becomes of ctx (its values are kept): one
// that only its deadline ends (a callctx.Context), cancelled only after
// every call has returned, which may be after Run returns, and marked
// Unwaited, since Run does not wait for the call past that deadline and
// the Tracker stops counting it once overdue: adapter.Run then calls the
// client on the worker that runs the call rather than on a goroutine of
// its own. The driver package documents both as part of the Conn
// contract. The inline call of a single node gets ctx with the timeout.
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
	// A single node runs inline, unless the round counts no votes and
	// does not wait for its reply.
	inline := r.Nodes == 1 && (r.Wait == nil || r.Yes != nil || len(r.Wait) > 0 && r.Wait[0])
	parent := ctx
	if !inline {
		parent = context.WithoutCancel(ctx)
	}
	// The calls of a round that is not inline run on goroutines that the
	// round does not wait for past their deadline: their contexts say so,
	// and an adapter need not start a goroutine of its own to return on
	// time (adapter.Run).
	nodeCtx, cancel := callctx.WithTimeout(parent, r.Timeout, !inline)
	s := &r.state
	s.unwaited = !inline
	s.track.overdue = monotime() + overdueTimeouts*int64(r.Timeout)
	s.remaining = r.Nodes
	var lanes []order
	var tasks []task
	if r.Nodes <= inlineNodes {
		s.replies, s.answered, lanes, tasks = s.replyBuf[:r.Nodes], s.answerBuf[:r.Nodes], s.orderBuf[:r.Nodes], s.taskBuf[:r.Nodes]
	} else {
		s.replies, s.answered, lanes, tasks = make([]Reply, r.Nodes), make([]bool, r.Nodes), make([]order, r.Nodes), make([]task, r.Nodes)
	}
	if !inline {
		// An inline call has decided the round when it returns: nothing
		// waits for done.
		s.done = make(chan struct{})
	}
	for _, w := range r.Wait {
		if w {
			s.waiting++
		}
	}
	if r.Wait != nil && r.Yes == nil && s.waiting == 0 && !inline {
		// No reply to wait for: the round is decided before it starts.
		s.decided = true
		close(s.done)
	}
	// Each node's request either is sent, after the previous request of
	// its lane, or is not: skipped now or on an earlier round of the
	// lanes. The Tracker counts only those sent.
	sent := 0
	for node := range lanes {
		skip := node < len(r.Skip) && r.Skip[node]
		ln := order{sent: !skip}
		if r.Lanes != nil {
			ln.prev, ln.more, ln.done, ln.sent = r.Lanes.enter(r.Nodes, node, skip)
		}
		if ln.sent {
			sent++
		}
		lanes[node] = ln
	}
	if r.Tracker != nil {
		r.Tracker.add(&s.track, sent)
	}
	s.parent, s.ctx, s.cancel, s.lanes = parent, nodeCtx, cancel, lanes
	for node, ln := range lanes {
		if !ln.sent {
			if r.record(s, node, Reply{Err: ErrNotSent}, false) {
				cancel()
			}
			continue
		}
		if inline {
			// The one node decides the round: its call runs on the
			// calling goroutine, bounded by its context.
			r.node(node)
			break
		}
		tasks[node] = task{r: r, node: node}
		r.Workers.run(&tasks[node])
	}
	// The round returns when Timeout has passed (nodeCtx) or ctx ends,
	// even if a call has not.
	cut := false // by the caller's ctx, before the nodes had their time
	if s.done != nil {
		select {
		case <-s.done:
		case <-nodeCtx.Done():
		case <-ctx.Done():
			cut = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided = true
	s.cut = cut
	if s.remaining == 0 {
		// Every node answered: no call writes s.replies any more.
		return s.replies
	}
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
		if r.Health != nil && !cut {
			if s.stragglers == nil {
				s.stragglers = make([]straggler, r.Nodes)
				now = r.Health.now()
			}
			s.stragglers[i].since = now
			s.stragglers[i].added = true
			r.Health.add(i, &s.stragglers[i])
		}
	}
	return replies
}

// after waits until ln's prev and more are closed and reports whether
// they were, rather than ctx ending first.
func after(ctx context.Context, ln order) bool {
	select {
	case <-ln.prev:
	case <-ctx.Done():
		return false
	}
	for _, p := range ln.more {
		select {
		case <-p:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// node runs the request of one node, after the requests it follows (its
// order in the round's state), and records the reply.
//
// A request that waited for the previous one of its lane gets the whole
// Timeout from the moment it is sent: the wait, bounded by the round's
// Timeout, would otherwise leave it too little time to be sent at all (a
// release after an extension that a slow node took long to answer). So a
// request may run until twice Timeout after its round started.
//
// A request whose wait took all of Timeout, or ended with ctx, is not
// sent. Its reply, ErrPending, is recorded at once, but the next request
// of its lane still follows the previous ones: done is closed only once
// they are. A lane whose first request was not sent is closed.
func (r *Round) node(node int) {
	s := &r.state
	parent, ctx, cancel, ln := s.parent, s.ctx, s.cancel, s.lanes[node]
	var reply Reply
	switch {
	case ln.prev == nil:
		reply = r.Call(ctx, node)
	case after(ctx, ln):
		callCtx, cancelCall := callctx.WithTimeout(parent, r.Timeout, s.unwaited)
		reply = r.Call(callCtx, node)
		cancelCall()
	default:
		// Not sent: the round ended before the requests it follows
		// returned. Its node has not answered, as ErrPending says; if
		// it is its lane's first request, the node never got what the
		// lane's later requests would follow.
		if r.Lanes != nil {
			r.Lanes.notSent(node, ln.done)
		}
		if r.record(s, node, Reply{Err: ErrPending}, false) {
			cancel()
		}
		// The lane passes to its next request once the previous one has
		// returned, which may take as long as that request's adapter: on
		// a goroutine of its own, so that neither the caller of a single
		// node's round nor a worker waits for it.
		go func() {
			<-ln.prev
			for _, p := range ln.more {
				<-p
			}
			close(ln.done)
			r.Tracker.done(&s.track)
		}()
		return
	}
	if r.Health != nil {
		r.Health.ended(node, reply.Err, r.Timeout)
	}
	if ln.done != nil {
		close(ln.done)
	}
	if r.record(s, node, reply, true) {
		cancel()
	}
	r.Tracker.done(&s.track)
}

// record records the reply of node, closes s.done if it decides the
// round, ends the node's straggler record if the round had returned
// without it, and reports whether it was the last reply of the round.
// sent says whether the reply is the node's, rather than that of a
// request not sent.
func (r *Round) record(s *roundState, node int, reply Reply, sent bool) (last bool) {
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
		if s.done != nil {
			close(s.done)
		}
	}
	var st *straggler
	if s.stragglers != nil && s.stragglers[node].added {
		st = &s.stragglers[node]
	}
	answered := sent && !s.cut
	s.mu.Unlock()
	if r.Health != nil && (st != nil || answered) {
		r.Health.end(node, st, answered)
	}
	return last
}

// settled reports whether the answers so far decide the round. The caller
// holds s.mu.
func (r *Round) settled(s *roundState) bool {
	switch {
	case s.remaining == 0:
		return true
	case r.Every, s.waiting > 0:
		return false
	case r.Yes == nil:
		return r.Wait != nil
	}
	return Decided(r.Nodes, s.yes, s.no)
}

// Lanes orders requests on each node: a request of a round run with some
// Lanes is sent to its node only once the request of the previous such
// round on that node has returned. The rounds of one lock share Lanes, so
// that a node applies them in the order they were made even when a round
// returns before that node answers. Lanes made with an Order (NewLanes)
// also send their first request on each node only once every request
// there of the other Lanes of that Order, entered before it, has
// returned. The zero value is ready to use and safe for concurrent use.
//
// A lane whose first request was not sent (Round.Skip, or a wait for the
// requests it follows that outlasted the round) is closed: no later
// request of the Lanes is sent on it, since its node never received what
// they would follow.
type Lanes struct {
	mu    sync.Mutex
	lanes []lane // per node
	order *Order
}

type lane struct {
	last   chan struct{} // closed when the lane's last request returned; nil before the first
	first  chan struct{} // the channel of the lane's first request
	closed bool          // the lane's first request was not sent
}

// NewLanes returns Lanes in order: their first request on each node
// follows the requests that the Lanes of order have entered there.
func NewLanes(order *Order) *Lanes { return &Lanes{order: order} }

// Order orders the Lanes of successive attempts on one resource: the
// first request of each of its Lanes on a node is sent once the requests
// entered on that node by the others, whether they are those Lanes' first
// requests or later ones, have returned. Later requests of a Lanes follow
// that Lanes' own only. The zero value is ready to use and safe for
// concurrent use.
//
// A first request's channel closes only once those of every request
// entered before it have, and a later request's only once its Lanes'
// previous one has. So a new first request needs to wait only for the
// latest first request and, of each Lanes that entered a request after
// that one, its last request: a handful of channels, however many
// requests are queued.
type Order struct {
	mu    sync.Mutex
	nodes []orderTail
}

// orderTail is what a new first request on one node waits for.
type orderTail struct {
	first chan struct{} // the channel of the latest first request
	later []laneTail    // the last request of each Lanes entered after it
}

type laneTail struct {
	lanes *Lanes
	last  chan struct{}
}

// enter records done, the channel of a new request of lanes on node, and,
// for the first request of its Lanes (first), returns the channels of the
// requests it must follow: prev, and the others in more, nil when there
// is at most one.
func (o *Order) enter(lanes *Lanes, nodes, node int, done chan struct{}, first bool) (prev <-chan struct{}, more []<-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.nodes == nil {
		o.nodes = make([]orderTail, nodes)
	}
	t := &o.nodes[node]
	if !first {
		for i := range t.later {
			if t.later[i].lanes == lanes {
				t.later[i].last = done
				return nil, nil
			}
		}
		t.later = append(t.later, laneTail{lanes, done})
		return nil, nil
	}
	if t.first != nil && isOpen(t.first) {
		prev = t.first
	}
	for _, lt := range t.later {
		if !isOpen(lt.last) {
			continue
		}
		if prev == nil {
			prev = lt.last
		} else {
			more = append(more, lt.last)
		}
	}
	clear(t.later)
	t.first, t.later = done, t.later[:0]
	return prev, more
}

// isOpen reports whether ch is not closed yet.
func isOpen(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// enter returns whether a new request on node is sent (not when skip is
// set or the lane is closed) and, if it is, the channels closed when the
// requests it follows on node have returned (prev, and any others in more;
// nil when there are none, or they have) and the channel that the new
// request closes when it returns. A skip on a lane that already carried a
// request is ignored: that request may have reached the node, so what
// follows it is sent too.
func (l *Lanes) enter(nodes, node int, skip bool) (prev <-chan struct{}, more []<-chan struct{}, done chan struct{}, sent bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lanes == nil {
		l.lanes = make([]lane, nodes)
	}
	ln := &l.lanes[node]
	if ln.closed || (skip && ln.last == nil) {
		ln.closed = true
		return nil, nil, nil, false
	}
	done = make(chan struct{})
	first := ln.last == nil
	if first {
		ln.first = done
	} else if isOpen(ln.last) {
		prev = ln.last
	}
	if l.order != nil {
		// The Order's lock is taken under the Lanes', never the other
		// way round.
		if p, m := l.order.enter(l, nodes, node, done, first); first {
			prev, more = p, m
		}
	}
	ln.last = done
	return prev, more, done, true
}

// notSent closes node's lane if done is the channel of its first request,
// which was not sent.
func (l *Lanes) notSent(node int, done chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := &l.lanes[node]; ln.first == done {
		ln.closed = true
	}
}
