package quorum

import "sync"

// Lanes order the requests of one lock on each node: a request of a round
// run with some Lanes is sent to its node only once the request of the
// previous such round on that node has returned, so that a node applies
// them in the order they were made even when a round returns before that
// node answers. Make Lanes with NewLanes; they are safe for concurrent use.
//
// A lane whose first request was not sent (Round.Skip, or a wait for the
// requests it follows that outlasted the round) is closed: no later
// request of the Lanes is sent on it, since its node never received what
// they would follow.
type Lanes struct {
	order *Order // whose lock guards lanes too
	lanes []lane // per node
}

type lane struct {
	last   chan struct{} // closed when the lane's last request returned; nil before the first
	first  chan struct{} // the channel of the lane's first request
	closed bool          // the lane's first request was not sent
}

// NewLanes returns Lanes in order: their first request on each node is
// sent once every request there of the other Lanes of order, entered
// before it, has returned.
func NewLanes(order *Order) *Lanes { return &Lanes{order: order} }

// Order orders the Lanes of successive attempts on one resource: the
// first request of each of its Lanes on a node follows every request
// entered there before it by the others; later requests of a Lanes follow
// that Lanes' own only. The zero value is ready to use.
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

// follow records done, the channel of a new request of lanes on node,
// and, for the first request of its Lanes (first), returns the channels
// of the requests it must follow: prev, and the others in more, nil when
// there is at most one. The caller holds o.mu.
func (o *Order) follow(lanes *Lanes, nodes, node int, done chan struct{}, first bool) (prev <-chan struct{}, more []<-chan struct{}) {
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
	l.order.mu.Lock()
	defer l.order.mu.Unlock()
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
	if p, m := l.order.follow(l, nodes, node, done, first); first {
		prev, more = p, m
	}
	ln.last = done
	return prev, more, done, true
}

// notSent closes node's lane if done is the channel of its first request,
// which was not sent.
func (l *Lanes) notSent(node int, done chan struct{}) {
	l.order.mu.Lock()
	defer l.order.mu.Unlock()
	if ln := &l.lanes[node]; ln.first == done {
		ln.closed = true
	}
}
