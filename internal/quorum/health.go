package quorum

import (
	"sync"
	"sync/atomic"
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
// caller's context. Health records when each such round returned. A busy
// node's stragglers end a moment after their rounds; a slow or stopped
// node's run on.
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
	// running counts the node's stragglers, and fails its requests that
	// failed in a row, so that a node with neither is found so without
	// taking mu.
	running, fails atomic.Int32
	// lagging mirrors behind, so that a request of a node that is not
	// behind ends without taking mu.
	lagging atomic.Bool

	mu sync.Mutex
	// queue holds the node's stragglers in the order their rounds
	// returned; an ended one stays until those before it have ended.
	queue []*straggler
	// behind is set by Behind and cleared once the node has caught up:
	// it has no straggler left and a request ended on time (see Health).
	behind bool
	// While behind: ends counts the requests that ended, and lag is how
	// long after its round returned the last of them did (0 for one that
	// ended before). catchUp is when the last probe was granted (zero
	// before the first), when ends was probed.
	ends, probed uint64
	lag          time.Duration
	catchUp      time.Time
	// probe is when a failing node may be sent a request again: one
	// probe interval after its last failure, or after the last probe.
	probe time.Time
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
	n.running.Add(1)
}

// end records that a request of node has returned: s is its straggler
// record, nil for a request that returned before its round did, and
// answered whether the node answered it in a round that the caller did
// not cut short, rather than the request not being sent.
func (h *Health) end(node int, s *straggler, answered bool) {
	n := &h.nodes[node]
	answered = answered && n.lagging.Load()
	if s == nil && !answered {
		return
	}
	var now time.Time
	if answered {
		now = h.now()
	}
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
	n.running.Add(-1)
	i := 0
	for i < len(n.queue) && n.queue[i].ended {
		n.queue[i] = nil
		i++
	}
	n.queue = n.queue[i:]
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
	n := &h.nodes[node]
	if n.running.Load() == 0 && !n.lagging.Load() {
		return false
	}
	now := h.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.behind {
		if len(n.queue) == 0 || now.Sub(n.queue[0].since) <= limit {
			return false
		}
		n.behind = true
		n.lagging.Store(true)
		n.catchUp, n.ends, n.probed = time.Time{}, 0, 0
		return true
	}
	if len(n.queue) > 0 {
		return true // its stragglers run on
	}
	switch {
	case n.ends > n.probed && n.lag <= limit:
		n.behind = false
		n.lagging.Store(false)
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
	return int(h.nodes[node].running.Load())
}

// ended records how a request sent to node, with the given timeout,
// ended: with err, which fails it if NodeFault says so. A failure that
// makes the node failing, or keeps it so, puts off its next probe by
// probeInterval(timeout).
func (h *Health) ended(node int, err error, timeout time.Duration) {
	n := &h.nodes[node]
	if err == nil || h.NodeFault != nil && !h.NodeFault(err) {
		if n.fails.Load() != 0 {
			n.mu.Lock()
			n.fails.Store(0)
			n.mu.Unlock()
		}
		return
	}
	now := h.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fails.Load() < FailLimit {
		n.fails.Add(1)
	}
	if n.fails.Load() == FailLimit {
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
	return node < len(h.nodes) && h.nodes[node].fails.Load() >= FailLimit
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
	n := &h.nodes[node]
	if n.fails.Load() < FailLimit {
		return false
	}
	now := h.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fails.Load() < FailLimit {
		return false
	}
	if !now.After(n.probe) {
		return true
	}
	n.probe = now.Add(probeInterval(timeout))
	return false
}
