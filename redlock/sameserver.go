package redlock

import (
	"sync/atomic"

	"github.com/locksmith-go/locksmith/driver"
)

// serverCheck remembers that the nodes' driver.ServerIdentifier IDs are
// all known and distinct, so that later rounds skip the comparison.
type serverCheck struct {
	distinct atomic.Bool
}

// sameServer returns an error matching ErrInvalidArgument when two nodes
// report one server through driver.ServerIdentifier. New cannot tell such
// nodes apart when their NodeIDs differ (two redigo pools to one server);
// their ServerIDs are known only once a round has reached them, so the
// rounds that acquire a lock ask after counting their votes. Counting one
// server twice would let fewer than a majority of real nodes grant a lock.
//
// Until every such node has an ID, each call compares the IDs known so
// far: it asks each node's ServerID, which does no I/O, and allocates
// nothing for up to 8 nodes.
func (c *Client) sameServer() error {
	if c.servers.distinct.Load() {
		return nil
	}
	var buf [8]string
	ids := buf[:0]
	complete := true
	for _, n := range c.nodes {
		id := ""
		if si, ok := n.Conn().(driver.ServerIdentifier); ok {
			if id = si.ServerID(); id == "" {
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
		c.servers.distinct.Store(true)
	}
	return nil
}
