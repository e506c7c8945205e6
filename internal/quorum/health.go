package quorum

import (
	"sync"
	"time"
)

// Health records, per node, the requests that outlived their rounds
// (stragglers: still running when a round returned without them, decided
// by the other nodes or at its timeout, not cut short by the caller's
// ctx), for a caller to tell which nodes are behind the others: a busy
// node's stragglers end a moment after their rounds, a slow or stopped
// node's run on. A node found behind gets one probe at a time until it
// answers one in time (see Behind), so that a node that is slow, rather
// than stopped, is not sent every round's request again each time its
// stragglers drain. Made by NewHealth; safe for concurrent use.
type Health struct {
	// Now is time.Now, or a test's clock set before the first round.
	Now func() time.Time

	nodes []healthNode
}

type healthNode struct {
	mu sync.Mutex
	// queue holds the node's stragglers in the order their rounds
	// returned; an ended one stays until those before it have ended.
	queue   []*straggler
	running int // stragglers not ended
	// behind is set by Behind and cleared once the node has caught up.
	// While it is set, ends counts the requests that ended, and lag is
	// how long after its round returned the last of them did (0 for one
	// that ended before); probed is ends when the last probe was granted,
	// at catchUp (zero before the first).
	behind       bool
	ends, probed uint64
	lag          time.Duration
	catchUp      time.Time
}

// straggler is a request that outlived its round.
type straggler struct {
	since time.Time // when its round returned; zero for no straggler
	ended bool
}

// NewHealth returns a Health for rounds over the given number of nodes;
// its methods take the index of one of them.
func NewHealth(nodes int) *Health {
	return &Health{Now: time.Now, nodes: make([]healthNode, nodes)}
}

// add records that node's request outlived its round, which returned at
// s.since.
func (h *Health) add(node int, s *straggler) {
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = append(n.queue, s)
	n.running++
}

// end records that a request of node has returned: s is its straggler
// record, nil for a request that returned before its round did, and
// answered whether the node answered it in a round that the caller did
// not cut short, rather than the request not being sent.
func (h *Health) end(node int, s *straggler, answered bool) {
	now := h.Now()
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	if answered && n.behind {
		n.ends++
		n.lag = 0
		if s != nil {
			n.lag = now.Sub(s.since)
		}
	}
	if s == nil {
		return
	}
	s.ended = true
	n.running--
	for len(n.queue) > 0 && n.queue[0].ended {
		n.queue = n.queue[1:]
	}
	if len(n.queue) == 0 {
		n.queue = nil // let the backing array go
	}
}

// Behind reports whether node is behind: one of its stragglers has been
// running for more than limit since its round returned, or it was found
// behind before and has not caught up (see Health). A node behind with no
// straggler left is due a probe: Behind then reports false to one caller,
// whose request is the probe, and true to the others until a request of
// the node has ended or 4×limit has passed (the probe was not sent; one
// still running then is a straggler once its round returns, and keeps the
// node behind). A request that ended within limit of its round ends the
// node's being behind; a later one makes the next caller's request a new
// probe.
func (h *Health) Behind(node int, limit time.Duration) bool {
	now := h.Now()
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case !n.behind:
		if len(n.queue) == 0 || now.Sub(n.queue[0].since) <= limit {
			return false
		}
		n.behind = true
		n.catchUp, n.ends, n.probed = time.Time{}, 0, 0
		return true
	case len(n.queue) > 0:
		return true // its stragglers run on
	case n.ends > n.probed && n.lag <= limit:
		n.behind = false
		return false
	case n.ends == n.probed && !n.catchUp.IsZero() && now.Sub(n.catchUp) <= 4*limit:
		return true // the probe is on its way
	}
	n.catchUp, n.probed = now, n.ends
	return false
}

// Stragglers returns how many requests of node are running after their
// round returned.
func (h *Health) Stragglers(node int) int {
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}
