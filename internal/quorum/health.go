package quorum

import (
	"sync"
	"time"
)

// FailLimit is how many requests of a node in a row must fail, with no
// success among them, for the node to be failing (see Health.Failing).
const FailLimit = 3

// Health records how each node's requests end, for a caller to tell which
// nodes are behind the others or failing. A Health is made by NewHealth
// and is safe for concurrent use.
//
// A node is behind when a request of it outlived its round by more than a
// limit: still running after its round returned without it (a straggler),
// decided by the other nodes or at its timeout, not cut short by the
// caller's context. A busy node's stragglers end a moment after their
// rounds; a slow or stopped node's run on.
//
// A node found behind stays so while its stragglers run, and then until it
// has answered a probe on time: once none is left, Behind reports false
// to one caller at a time, whose request is the probe, and the node is no
// longer behind once a request sent to it ends within the limit of its
// round. So a node that is slow, rather than stopped, gets one request at
// a time instead of every round's until its stragglers pile up again.
//
// A node is failing when its last FailLimit requests failed, as those of a
// node that refuses connections do at once, and no request of it has
// succeeded since.
type Health struct {
	// Now, when not nil, replaces time.Now, for tests. Set it before the
	// first round.
	Now func() time.Time
	// NodeFault, when not nil, reports whether an error of a request
	// counts against its node's health: false for an error that the
	// request itself caused, not the node. Nil counts every error. Set
	// it before the first round.
	NodeFault func(error) bool

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
	fails        int       // requests failed in a row, up to FailLimit
	probe        time.Time // when a failing node may be sent a request again
}

// straggler is a request that outlived its round.
type straggler struct {
	since time.Time // when its round returned
	added bool      // recorded in the Health
	ended bool
}

// NewHealth returns a Health for rounds over the given number of nodes.
func NewHealth(nodes int) *Health {
	return &Health{nodes: make([]healthNode, nodes)}
}

func (h *Health) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
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
	now := h.now()
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
	if node >= len(h.nodes) {
		return false
	}
	now := h.now()
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
	if node >= len(h.nodes) {
		return 0
	}
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// ended records how a request sent to node, with the given timeout,
// ended: with err, which fails it if NodeFault says so. A failure that
// makes the node failing, or keeps it so, puts off its next probe by
// probeInterval(timeout).
func (h *Health) ended(node int, err error, timeout time.Duration) {
	failed := err != nil && (h.NodeFault == nil || h.NodeFault(err))
	now := h.now()
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case !failed:
		n.fails = 0
	case n.fails < FailLimit:
		n.fails++
	}
	if failed && n.fails == FailLimit {
		n.probe = now.Add(probeInterval(timeout))
	}
}

// probeInterval is how long a failing node whose requests have the given
// timeout waits for its next probe: the timeout, and at most a second, so
// that a node back from a short outage does not wait for a long timeout.
func probeInterval(timeout time.Duration) time.Duration {
	return min(timeout, time.Second)
}

// Failed reports whether node is failing (see Health), whether or not it
// is due a probe; unlike Failing, it grants none.
func (h *Health) Failed(node int) bool {
	if node >= len(h.nodes) {
		return false
	}
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fails >= FailLimit
}

// Failing reports whether node is failing (see Health) and is not due a
// probe. When its probe is due, Failing reports false to one caller, whose
// request is the probe, and puts off the next probe by
// probeInterval(timeout), the caller's request timeout: a failing node
// gets one probe per interval, and a success ends its failing.
func (h *Health) Failing(node int, timeout time.Duration) bool {
	if node >= len(h.nodes) {
		return false
	}
	now := h.now()
	n := &h.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.fails < FailLimit:
		return false
	case !now.After(n.probe):
		return true
	}
	n.probe = now.Add(probeInterval(timeout))
	return false
}
