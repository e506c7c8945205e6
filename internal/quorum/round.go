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
// its outcome is decided: Yes holds for a quorum of the replies, or can no
// longer. The requests of the nodes that had not answered by then go on in
// the background, each bounded by Timeout. A Round is used once, by one Run.
type Round struct {
	Nodes   int
	Timeout time.Duration
	// Call sends the request to node and returns its reply, on a
	// goroutine of its own unless Inline.
	Call func(ctx context.Context, node int) Reply
	// Yes reports whether a reply votes for the outcome the round asks
	// for. A round without Yes counts no votes: it waits for every reply,
	// or with Wait for those of Wait alone.
	Yes func(Reply) bool
	// Wait, when not nil, makes the round wait for the reply of every
	// node i with Wait[i], and in a round that counts votes for the votes
	// to decide it too.
	Wait []bool
	// Lanes, when not nil, orders this round's request on each node
	// after the previous round's with the same Lanes.
	Lanes *Lanes
	// Skip, when not nil, names the nodes that the request is not sent
	// to: their reply is ErrNotSent, a vote against, and with Lanes no
	// later request of the same Lanes is sent to them either.
	Skip []bool
	// Health, when not nil, records the requests still running when the
	// round returns (see Health). It must be made for Nodes nodes.
	Health *Health
	// Outcomes, when not nil, is told how each request sent ended, before
	// the next request of its lane is sent; not of an inline call whose
	// ctx ended while it ran, which says nothing of the node.
	Outcomes interface {
		Ended(node int, err error, timeout time.Duration)
	}
	// Tracker, when not nil, counts the round's requests while they run,
	// also after Run returned, as a sync.WaitGroup does.
	Tracker interface {
		Add(n int)
		Done()
	}
	// Inline runs the call of a round of one node on the calling
	// goroutine, when the round waits for its reply and no earlier
	// request of its lane is still running. Set it only when the node's
	// client returns by its ctx's deadline: nothing else bounds that call.
	Inline bool

	state roundState // in the Round, so that a round allocates it with the Round
}

// roundState is what the calls of a round share.
type roundState struct {
	mu       sync.Mutex
	replies  []Reply
	answered []bool
	yes, no  int // answers that vote for the outcome, and the others
	waiting  int // nodes of Round.Wait that have not answered
	decided  bool
	cut      bool          // the caller's ctx ended the round before its nodes had their time
	returned bool          // Run returned s.replies
	done     chan struct{} // closed once decided
	// deciding counts the requests still waiting for the requests they
	// follow, until they are sent or known not to be.
	deciding sync.WaitGroup
	// stragglers holds, for each node that had not answered when the
	// round returned, its record in Round.Health.
	stragglers []straggler
	// The calls' context: the caller's with its cancellation detached
	// (parent), and bounded by Timeout (ctx, cancelled once every node
	// has answered).
	parent, ctx context.Context
	cancel      context.CancelFunc
	// The backing arrays of replies and answered for rounds of up to
	// inlineNodes nodes, which then allocate nothing apart.
	replyBuf  [inlineNodes]Reply
	answerBuf [inlineNodes]bool
}

// order is how one node's request of a round is sent: after prev and
// more, when not nil, closing done when it returns; or not at all.
type order struct {
	prev <-chan struct{}
	more []<-chan struct{}
	done chan struct{}
	sent bool
}

// inlineNodes is the largest number of nodes whose replies roundState
// holds, and whose orders Run keeps on its stack.
const inlineNodes = 5

// Run runs the round and returns every node's reply, in node order, as
// they were when the round returned: once it was decided, Timeout passed
// or ctx ended, whatever the calls do. A node that had not answered has
// ErrPending.
//
// Each call's context ends Timeout after it was sent whatever becomes of
// ctx, whose values it keeps: a caller that cancels ctx once the round
// returned, a deferred cancel typically, does not cut short the requests
// still on their way. The inline call gets ctx with the Timeout instead.
func (r *Round) Run(ctx context.Context) []Reply {
	if r.Nodes == 0 {
		return nil
	}
	s := &r.state
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
	if r.Tracker != nil {
		r.Tracker.Add(sent)
	}
	for node, ln := range orders {
		switch {
		case !ln.sent:
			r.record(s, node, Reply{Err: ErrNotSent}, false)
			continue
		case ln.prev != nil:
			s.deciding.Add(1)
		}
		go r.node(s, node, ln)
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
	s.decided, s.cut, s.returned = true, cut, true // s.replies is the caller's now
	var now time.Time
	for i := range s.replies {
		if s.answered[i] {
			continue
		}
		s.replies[i] = Reply{Err: ErrPending}
		// A request that the caller cut short is behind nothing.
		if r.Health != nil && !cut {
			if s.stragglers == nil {
				s.stragglers = make([]straggler, r.Nodes)
				now = r.Health.Now()
			}
			s.stragglers[i] = straggler{since: now}
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
	// a goroutine would not have been cancelled: neither Health nor
	// Outcomes hears of it.
	if ln.done != nil {
		close(ln.done)
	}
	r.record(s, 0, Reply{Err: ErrPending}, false)
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
	if r.Tracker != nil {
		defer r.Tracker.Done()
	}
	ctx := s.ctx
	if ln.prev != nil {
		if !after(s.ctx, ln) {
			r.Lanes.notSent(node, ln.done)
			s.deciding.Done()
			r.record(s, node, Reply{Err: ErrPending}, false)
			after(context.Background(), ln)
			close(ln.done)
			return
		}
		s.deciding.Done()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(s.parent, r.Timeout)
		defer cancel()
	}
	r.ended(s, node, ln, r.Call(ctx, node))
}

// after waits until ln's prev and more are closed and reports whether
// they were, rather than ctx ending first (never for Background).
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

// ended records the reply of a request sent to node and lets the next
// request of its lane go.
func (r *Round) ended(s *roundState, node int, ln order, reply Reply) {
	if r.Outcomes != nil {
		r.Outcomes.Ended(node, reply.Err, r.Timeout)
	}
	if ln.done != nil {
		close(ln.done)
	}
	r.record(s, node, reply, true)
}

// record records the reply of node, closes s.done if it decides the
// round, ends the node's straggler record if the round had returned
// without it, and once every node has answered cancels the calls'
// context. sent says whether the reply is the node's, rather than that
// of a request not sent.
func (r *Round) record(s *roundState, node int, reply Reply, sent bool) {
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
	last := s.yes+s.no == r.Nodes
	if !s.decided && (last || r.settled(s)) {
		s.decided = true
		if s.done != nil {
			close(s.done)
		}
	}
	var st *straggler
	if s.stragglers != nil && !s.stragglers[node].since.IsZero() {
		st = &s.stragglers[node]
	}
	answered := sent && !s.cut
	s.mu.Unlock()
	if r.Health != nil && (st != nil || answered) {
		r.Health.end(node, st, answered)
	}
	if last && s.cancel != nil { // nil for an inline call
		s.cancel()
	}
}

// settled reports whether the answers so far decide the round, before
// every node has answered. The caller holds s.mu.
func (r *Round) settled(s *roundState) bool {
	switch {
	case s.waiting > 0:
		return false
	case r.Yes == nil:
		return r.Wait != nil
	}
	return Decided(r.Nodes, s.yes, s.no)
}
