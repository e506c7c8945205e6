package quorum

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrPending is the error of a node that had not answered when its round
// returned: the others had decided it, the timeout had passed or ctx had
// ended. Its request may still be running and may still be applied.
var ErrPending = errors.New("no reply yet when the round ended")

// ErrNotSent is the reply of a node that a round did not send its request
// to: the caller skipped the node (Round.Skip), or an earlier request of
// the same Lanes was not sent to it.
var ErrNotSent = errors.New("request not sent")

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
	// Skip, when not nil, names the nodes that the request is not sent
	// to: their reply is ErrNotSent, a vote against, and with Lanes no
	// later request of the same Lanes is sent to them either.
	Skip []bool
	// Health, when not nil, records how each request sent ends, and
	// those that are still running when the round returns (see Health).
	// It must be made for Nodes nodes.
	Health *Health
	// Tracker, when not nil, counts the round's requests while they run.
	Tracker *Tracker
	// Inline runs the call of a round of one node on the calling
	// goroutine, when the round waits for its reply and no earlier
	// request of its lane is still running. Set it only when the node's
	// client returns by its ctx's deadline: nothing else bounds that call.
	Inline bool

	// state is kept in the Round, used once, so that a round allocates
	// its state with the Round rather than apart.
	state roundState
}

// roundState is what the calls of a round share.
type roundState struct {
	mu        sync.Mutex
	replies   []Reply
	answered  []bool
	yes, no   int // answers that vote for the outcome, and the others
	waiting   int // nodes of Round.Wait that have not answered
	remaining int // nodes that have not answered
	decided   bool
	cut       bool          // the caller's ctx ended the round before its nodes had their time
	returned  bool          // Run returned s.replies
	done      chan struct{} // closed once decided
	// deciding counts the requests still waiting for the requests they
	// follow, until they are sent or known not to be.
	deciding sync.WaitGroup
	// stragglers holds, for each node that had not answered when the
	// round returned, its record in Round.Health (added set).
	stragglers []straggler
	// The node calls' context, made from the caller's with its
	// cancellation detached; ctx bounds the calls sent at once, and is
	// cancelled once every node has answered.
	parent, ctx context.Context
	cancel      context.CancelFunc
	// The backing arrays of replies and answered for rounds of up to
	// inlineNodes nodes, which then allocate nothing apart.
	replyBuf  [inlineNodes]Reply
	answerBuf [inlineNodes]bool
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
// holds, and whose orders Run keeps on its stack, without allocating them
// apart.
const inlineNodes = 5

// Run runs the round and returns every node's reply, in node order, as
// they were when the round returned. A node that had not answered has
// ErrPending.
//
// Each call runs on a goroutine of its own, with a context that ends
// Timeout after it was sent whatever becomes of ctx (its values are
// kept), cancelled only once the call returned: a caller that cancels ctx
// once the round returned, a deferred cancel typically, does not cut
// short the requests still on their way. Run returns once the round is
// decided, Timeout has passed or ctx has ended, whatever the calls do.
// The inline call (Round.Inline) gets ctx with the Timeout instead.
func (r *Round) Run(ctx context.Context) []Reply {
	if r.Nodes == 0 {
		return nil
	}
	s := &r.state
	s.remaining = r.Nodes
	// Each node's order is handed to its call rather than kept in s,
	// which every round allocates.
	var orderBuf [inlineNodes]order
	var orders []order
	if r.Nodes <= inlineNodes {
		s.replies, s.answered, orders = s.replyBuf[:r.Nodes], s.answerBuf[:r.Nodes], orderBuf[:r.Nodes]
	} else {
		s.replies, s.answered, orders = make([]Reply, r.Nodes), make([]bool, r.Nodes), make([]order, r.Nodes)
	}
	for _, w := range r.Wait {
		if w {
			s.waiting++
		}
	}
	// A round that counts no votes and waits for no reply is decided
	// before it starts.
	s.decided = r.Wait != nil && r.Yes == nil && s.waiting == 0
	// Each node's request either is sent, after the previous request of
	// its lane, or is not: skipped now or on an earlier round of the
	// lanes.
	sent := 0
	for node := range orders {
		skip := node < len(r.Skip) && r.Skip[node]
		ln := order{sent: !skip}
		if r.Lanes != nil {
			ln.prev, ln.more, ln.done, ln.sent = r.Lanes.enter(r.Nodes, node, skip)
		}
		if ln.sent {
			sent++
		}
		orders[node] = ln
	}
	if ln := orders[0]; r.Inline && r.Nodes == 1 && ln.sent && ln.prev == nil && !s.decided {
		return r.inline(ctx, s, ln)
	}
	s.done = make(chan struct{})
	if s.decided {
		close(s.done)
	}
	// A ctx that can never be cancelled (Background, or one detached
	// already) needs no detaching.
	s.parent = ctx
	if ctx.Done() != nil {
		s.parent = context.WithoutCancel(ctx)
	}
	s.ctx, s.cancel = context.WithTimeout(s.parent, r.Timeout)
	r.Tracker.add(sent)
	for _, ln := range orders {
		if ln.sent && ln.prev != nil {
			s.deciding.Add(1)
		}
	}
	for node, ln := range orders {
		if ln.sent {
			go r.node(s, node, ln)
		} else if r.record(s, node, Reply{Err: ErrNotSent}, false) {
			s.cancel()
		}
	}
	cut := false // by the caller's ctx, before the nodes had their time
	select {
	case <-s.done:
	case <-s.ctx.Done():
		// The requests still waiting for the ones they follow are not
		// sent: they close their lanes before the round returns, so that
		// the next round of the Lanes finds them closed.
		s.deciding.Wait()
	case <-ctx.Done():
		cut = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The calls that answer from now on leave s.replies alone: it is the
	// caller's.
	s.decided, s.cut, s.returned = true, cut, true
	var now time.Time
	for i := range s.replies {
		if s.answered[i] {
			continue
		}
		s.replies[i] = Reply{Err: ErrPending}
		// A request outlives a round that the others decided, or that
		// timed out with it; one that the caller cut short is not behind
		// anything.
		if r.Health != nil && !cut {
			if s.stragglers == nil {
				s.stragglers = make([]straggler, r.Nodes)
				now = r.Health.now()
			}
			s.stragglers[i] = straggler{since: now, added: true}
			r.Health.add(i, &s.stragglers[i])
		}
	}
	return s.replies
}

// inline runs the call of a round's one node on the calling goroutine.
func (r *Round) inline(ctx context.Context, s *roundState, ln order) []Reply {
	callCtx, cancel := context.WithTimeout(ctx, r.Timeout)
	reply := r.Call(callCtx, 0)
	cancel()
	if ctx.Err() == nil {
		r.ended(s, 0, ln, reply)
		return s.replies
	}
	// ctx ended while the call ran, which a client that honours only its
	// deadline does not stop at. A round on goroutines returns when ctx
	// ends, without the reply; so does this one, so that a caller who
	// gave up is never handed what it asked for. The call's end, perhaps
	// the cancellation's error, says nothing of the node, whose call on
	// a goroutine would not have been cancelled: the round is cut short,
	// and Health records none of it.
	if ln.done != nil {
		close(ln.done)
	}
	s.cut = true
	r.record(s, 0, reply, true)
	s.replies[0] = Reply{Err: ErrPending}
	return s.replies
}

// node runs the request of one node, sent in order ln, on a goroutine of
// its own, after the requests it follows, and records the reply.
//
// A request that waited for the previous one of its lane gets the whole
// Timeout from the moment it is sent: the wait, bounded by the round's
// Timeout, would otherwise leave it too little time to be sent at all (a
// release after an extension that a slow node took long to answer). So a
// request may run until twice Timeout after its round started.
//
// A request whose wait took all of Timeout is not sent. Its reply,
// ErrPending, is recorded at once, but the next request of its lane
// still follows the previous ones: done is closed only once they are. A
// lane whose first request was not sent is closed.
func (r *Round) node(s *roundState, node int, ln order) {
	defer r.Tracker.Done()
	ctx := s.ctx
	if ln.prev != nil {
		if !after(s.ctx, ln) {
			if r.Lanes != nil {
				r.Lanes.notSent(node, ln.done)
			}
			s.deciding.Done()
			if r.record(s, node, Reply{Err: ErrPending}, false) {
				s.cancel()
			}
			<-ln.prev
			for _, p := range ln.more {
				<-p
			}
			close(ln.done)
			return
		}
		s.deciding.Done()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(s.parent, r.Timeout)
		defer cancel()
	}
	if r.ended(s, node, ln, r.Call(ctx, node)) {
		s.cancel()
	}
}

// after waits until ln's prev and more are closed and reports whether
// they were, rather than ctx ending first.
func after(ctx context.Context, ln order) bool {
	for _, p := range append([]<-chan struct{}{ln.prev}, ln.more...) {
		select {
		case <-p:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// ended records the reply of a request sent to node, lets the next
// request of its lane go, and reports whether it was the last reply of
// the round.
func (r *Round) ended(s *roundState, node int, ln order, reply Reply) (last bool) {
	if r.Health != nil {
		r.Health.ended(node, reply.Err, r.Timeout)
	}
	if ln.done != nil {
		close(ln.done)
	}
	return r.record(s, node, reply, true)
}

// record records the reply of node, closes s.done if it decides the
// round, ends the node's straggler record if the round had returned
// without it, and reports whether it was the last reply of the round.
// sent says whether the reply is the node's, rather than that of a
// request not sent.
func (r *Round) record(s *roundState, node int, reply Reply, sent bool) (last bool) {
	s.mu.Lock()
	if !s.returned {
		s.replies[node] = reply
	}
	s.answered[node] = true
	if r.Yes != nil && r.Yes(reply) {
		s.yes++
	} else {
		s.no++
	}
	if node < len(r.Wait) && r.Wait[node] {
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
