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
	if r.Tracker != nil {
		r.Tracker.add(r.Nodes)
	}
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
	for node := range r.Nodes {
		var prev <-chan struct{}
		var done chan struct{}
		if r.Lanes != nil {
			prev, done = r.Lanes.enter(r.Nodes, node)
		}
		if r.Nodes == 1 {
			// The one node decides the round: its call runs on the
			// calling goroutine, bounded by its context.
			r.node(parent, nodeCtx, cancel, s, node, prev, done)
			break
		}
		go r.node(parent, nodeCtx, cancel, s, node, prev, done)
	}
	// The round returns when Timeout has passed (nodeCtx) or ctx ends,
	// even if a call has not.
	select {
	case <-s.done:
	case <-nodeCtx.Done():
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided = true
	replies := make([]Reply, r.Nodes)
	for i := range replies {
		if s.answered[i] {
			replies[i] = s.replies[i]
		} else {
			replies[i] = Reply{Err: ErrPending}
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
	last := s.remaining == 0
	if !s.decided && r.settled(s) {
		s.decided = true
		close(s.done)
	}
	s.mu.Unlock()
	if last {
		cancel()
	}
	if r.Tracker != nil {
		r.Tracker.done()
	}
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
type Lanes struct {
	mu   sync.Mutex
	last []chan struct{} // per node, closed when its last request returned
}

// enter returns a channel closed when the previous request on node has
// returned (nil when there was none, or it has) and the channel that the
// new request closes when it returns.
func (l *Lanes) enter(nodes, node int) (prev <-chan struct{}, done chan struct{}) {
	done = make(chan struct{})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make([]chan struct{}, nodes)
	}
	if p := l.last[node]; p != nil {
		select {
		case <-p:
		default:
			prev = p
		}
	}
	l.last[node] = done
	return prev, done
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
