package redlock

import (
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// skipped returns the nodes that an acquire of req is not sent to, nil
// for none, at most as many as leave a quorum: those behind the others,
// whose requests are still running lagLimit after their rounds returned
// without them, or were and have not answered a probe within it since
// (quorum.Health), and those failing, whose last requests all failed and
// which are not due a probe (nodeFailures). A node behind would hardly
// answer in time, and each request sent to it would wait behind the
// others, adding load to a node that cannot keep up; a failing node, one
// that refuses connections say, would fail it, at the cost of a dial or
// more. The lock's extends and releases skip the node too (quorum.Lanes).
func (c *Client) skipped(req request) []bool {
	if c.cfg.skipAlways != nil {
		return c.cfg.skipAlways
	}
	n := len(c.nodes)
	spare := n - quorum.Size(n)
	if !c.cfg.skipUnhealthy || spare == 0 || req.every {
		// A request whose keys may lie in different hash slots goes to
		// every node, so that any Cluster node's CROSSSLOT refusal is
		// seen (see crossSlot).
		return nil
	}
	// The failing nodes first, then those behind: a request sent to a
	// failing node fails, while one sent to a node behind may still be
	// answered in time. Each node is asked once whether it is behind, and
	// Failing, which may grant the node its probe, only of a node that is
	// not: a probe granted must be sent.
	limit := lagLimit(req.nodeTimeout)
	var buf [8]bool
	behind := buf[:0]
	for i := range n {
		behind = append(behind, c.health.Behind(i, limit))
	}
	var skip []bool
	mark := func(i int) {
		if skip == nil {
			skip = make([]bool, n)
		}
		skip[i] = true
		spare--
	}
	for i := 0; i < n && spare > 0; i++ {
		if behind[i] && c.fails.failed(i) || !behind[i] && c.fails.failing(i, req.nodeTimeout) {
			mark(i)
		}
	}
	for i := 0; i < n && spare > 0; i++ {
		if behind[i] && (skip == nil || !skip[i]) {
			mark(i)
		}
	}
	return skip
}

// lagLimit is how long a node's request may run on after its round
// returned before the node counts as behind: a tenth of the per-node
// timeout, and at least defaultNodeTimeoutMin, since on a busy host the
// goroutine that reads a healthy node's reply may wait that long for a
// CPU. A tenth finds a node that turned slow before the requests sent to
// it meanwhile fill its client's pool (10 ms at a 2 s TTL); a node found
// behind by mistake costs a probe answered in time (quorum.Health).
func lagLimit(nodeTimeout time.Duration) time.Duration {
	return max(nodeTimeout/10, defaultNodeTimeoutMin)
}
