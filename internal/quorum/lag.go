package quorum

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotSent is the reply of a node that a round did not send its request
// to: the caller skipped the node (Round.Skip), or an earlier request of
// the same Lanes was not sent to it.
var ErrNotSent = errors.New("request not sent")

// Lag records, for each node, the requests that are still running after
// their round returned without them (stragglers): decided by the other
// nodes or at its timeout, not cut short by the caller's context. It
// records when each round returned. A node whose oldest straggler has
// outlived its round by more than a limit is behind the others, which a
// caller can tell from a node that is merely busy: a busy node's
// stragglers end a moment after their rounds. A Lag is made by NewLag and
// is safe for concurrent use.
type Lag struct {
	// Now, when not nil, replaces time.Now, for tests. Set it before the
	// first round.
	Now func() time.Time

	nodes []lagNode
}

type lagNode struct {
	// running counts the node's stragglers, so that a node without any
	// is found so without taking mu.
	running atomic.Int32

	mu sync.Mutex
	// queue holds the node's stragglers in the order their rounds
	// returned; an ended one stays until those before it have ended.
	queue []*straggler
	// behind is set by Behind and cleared once the node has no straggler
	// left: a node found behind stays so until it has caught up.
	behind bool
}

// straggler is a request that outlived its round.
type straggler struct {
	since time.Time // when its round returned
	added bool      // recorded in the Lag
	ended bool
}

// NewLag returns a Lag for rounds over the given number of nodes.
func NewLag(nodes int) *Lag {
	return &Lag{nodes: make([]lagNode, nodes)}
}

func (l *Lag) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// add records that node's request outlived its round, which returned at
// s.since.
func (l *Lag) add(node int, s *straggler) {
	n := &l.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = append(n.queue, s)
	n.running.Add(1)
}

// end records that the straggler s of node has returned.
func (l *Lag) end(node int, s *straggler) {
	n := &l.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	s.ended = true
	n.running.Add(-1)
	i := 0
	for i < len(n.queue) && n.queue[i].ended {
		n.queue[i] = nil
		i++
	}
	n.queue = n.queue[i:]
	if len(n.queue) == 0 {
		n.queue = nil // let the backing array go
		n.behind = false
	}
}

// Behind reports whether node is behind: one of its stragglers has been
// running for more than limit since its round returned, or it was found
// behind before and still has stragglers running.
func (l *Lag) Behind(node int, limit time.Duration) bool {
	if node >= len(l.nodes) {
		return false
	}
	n := &l.nodes[node]
	if n.running.Load() == 0 {
		return false
	}
	now := l.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.queue) == 0 {
		return false
	}
	if !n.behind && now.Sub(n.queue[0].since) > limit {
		n.behind = true
	}
	return n.behind
}

// Stragglers returns how many requests of node are running after their
// round returned.
func (l *Lag) Stragglers(node int) int {
	if node >= len(l.nodes) {
		return 0
	}
	return int(l.nodes[node].running.Load())
}
