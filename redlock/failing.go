package redlock

import (
	"sync"
	"time"
)

// failLimit is how many requests of a node in a row must fail, with no
// success among them, for the node to be failing: new locks skip it (see
// skipped) and a failed release is not sent to it again (see cleanup).
const failLimit = 3

// nodeFailures remembers how each node's requests end: the failures in a
// row, since when, the last error and whether the node ever answered, so
// that a failing node is skipped and an error can name a node's cause
// (nodecause.go). A failing node gets one probe at a time, the acquire of
// the next lock, at most one per probe interval, so that a node back from
// an outage is found again; a success ends its failing. Safe for
// concurrent use.
type nodeFailures struct {
	now   func() time.Time // time.Now, or a test's clock (SetHealthClock)
	nodes []nodeFailure
}

type nodeFailure struct {
	mu       sync.Mutex
	fails    int       // requests failed in a row
	since    time.Time // when the first of them failed
	last     error     // the error of the last one, if it failed
	answered bool      // a request of the node ended without failing
	probe    time.Time // when a failing node may be sent a request again
}

func newNodeFailures(nodes int) nodeFailures {
	return nodeFailures{now: time.Now, nodes: make([]nodeFailure, nodes)}
}

// Ended records how a request sent to node, with the given timeout, ended
// (quorum.Round.Outcomes). A CROSSSLOT refusal is the caller's mistake, not
// the node's (see crossSlot): the node answered. A failure that makes the
// node failing, or keeps it so, puts off its next probe by
// probeInterval(timeout).
func (f *nodeFailures) Ended(node int, err error, timeout time.Duration) {
	now := f.now()
	n := &f.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil || isCrossSlot(err) {
		n.fails, n.last, n.answered = 0, nil, true
		return
	}
	if n.fails == 0 {
		n.since = now
	}
	n.fails++
	n.last = err
	if n.fails >= failLimit {
		n.probe = now.Add(probeInterval(timeout))
	}
}

// of returns what node's requests came to: how many failed in a row and
// since when, whether any ever ended without failing, and the error of
// the last one, if it failed.
func (f *nodeFailures) of(node int) (fails int, since time.Time, answered bool, last error) {
	n := &f.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fails, n.since, n.answered, n.last
}

// probeInterval is how long a failing node whose requests have the given
// timeout waits for its next probe: the timeout, and at most a second, so
// that a node back from a short outage does not wait for a long timeout.
func probeInterval(timeout time.Duration) time.Duration {
	return min(timeout, time.Second)
}

// failed reports whether node is failing, whether or not it is due a
// probe; unlike failing, it grants none.
func (f *nodeFailures) failed(node int) bool {
	fails, _, _, _ := f.of(node)
	return fails >= failLimit
}

// failing reports whether node is failing and not due a probe. When its
// probe is due, failing reports false to one caller, whose request is the
// probe, and puts off the next one by probeInterval(timeout), the
// caller's request timeout.
func (f *nodeFailures) failing(node int, timeout time.Duration) bool {
	now := f.now()
	n := &f.nodes[node]
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.fails < failLimit:
		return false
	case !now.After(n.probe):
		return true
	}
	n.probe = now.Add(probeInterval(timeout))
	return false
}
