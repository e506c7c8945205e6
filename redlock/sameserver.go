package redlock

import (
	"sync/atomic"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// serverCheck remembers that the nodes' driver.ServerIdentifier IDs are
// all known and distinct, or that no node is a ServerIdentifier, so that
// later rounds neither compare the IDs nor wait for them.
type serverCheck struct {
	settled atomic.Bool
	// ids holds, in node order, each node's Conn as a ServerIdentifier,
	// nil for a Conn that is none. It is nil when no node is one.
	ids []driver.ServerIdentifier
}

// init sets s up for nodes: with no ServerIdentifier among them, there is
// nothing to compare.
func (s *serverCheck) init(nodes []*scripts.Node) {
	for i, n := range nodes {
		if si, ok := n.Conn().(driver.ServerIdentifier); ok {
			if s.ids == nil {
				s.ids = make([]driver.ServerIdentifier, len(nodes))
			}
			s.ids[i] = si
		}
	}
	if s.ids == nil {
		s.settled.Store(true)
	}
}

// unknownServers returns the nodes whose reply a round that acquires a
// lock waits for, whatever the votes: the ServerIdentifiers whose ID is
// not known yet; nil when there are none. A round that returned at a
// quorum before such a node answered would let sameServer miss that it
// reaches the same server as another node, so the first lock through two
// pools of one server could be granted; this way it fails, whichever node
// answers first, once the node learns its ID in that round. A node that
// does not answer holds the round up to the per-node timeout, until it is
// skipped as failing (see Client.skipped).
func (c *Client) unknownServers() []bool {
	if c.servers.settled.Load() {
		return nil
	}
	var wait []bool
	for i, si := range c.servers.ids {
		if si == nil {
			continue
		}
		if _, known := si.ServerID(); !known {
			if wait == nil {
				wait = make([]bool, len(c.nodes))
			}
			wait[i] = true
		}
	}
	return wait
}

// sameServer returns an error matching ErrInvalidArgument when two nodes
// report one server through driver.ServerIdentifier. New cannot tell such
// nodes apart when their NodeIDs differ (two redigo pools to one server);
// their ServerIDs are known only once a round has reached them, so the
// rounds that acquire a lock ask after counting their votes. Counting one
// server twice would let fewer than a majority of real nodes grant a lock.
//
// Until every such node's ID is known, each call compares the IDs known so
// far: it asks each node's ServerID, which does no I/O, and allocates
// nothing for up to 8 nodes.
func (c *Client) sameServer() error {
	if c.servers.settled.Load() {
		return nil
	}
	var buf [8]string
	ids := buf[:0]
	complete := true
	for _, si := range c.servers.ids {
		id := ""
		if si != nil {
			var known bool
			if id, known = si.ServerID(); !known {
				complete = false
			}
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		if id == "" {
			continue
		}
		for j, other := range ids[:i] {
			if other == id {
				return invalidf("node %d reaches the same server as node %d (run_id %s)", i, j, id)
			}
		}
	}
	if complete {
		c.servers.settled.Store(true)
	}
	return nil
}
