package redsync

import (
	"math/rand/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/nodeset"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Redsync makes mutexes over a fixed set of independent Redis nodes. It is
// safe for concurrent use and owns nothing: the Conns given to New stay the
// caller's to close.
type Redsync struct {
	nodes []*scripts.Node
	err   error // why the nodes cannot form a quorum, if they cannot
}

// New returns a Redsync whose mutexes are granted by a majority of conns,
// counted over len(conns) whether or not the nodes are reachable. Each Conn
// must reach an independent Redis node; build it from a Redis client with
// one of locksmith's adapters (goredis.New, redigo.New, rueidis.New).
//
// New does no I/O and never fails. When conns is empty, holds a nil Conn,
// or holds the same node twice (which would let fewer than a majority of
// real nodes grant a lock), every mutex made from the Redsync reports that
// as the error of each call that would contact the nodes.
func New(conns ...driver.Conn) *Redsync {
	r := &Redsync{err: checkConns(conns)}
	if r.err == nil {
		r.nodes = make([]*scripts.Node, len(conns))
		for i, conn := range conns {
			r.nodes[i] = scripts.NewNode(conn)
		}
	}
	return r
}

func checkConns(conns []driver.Conn) error {
	if len(conns) == 0 {
		return configErrorf("no Redis nodes given to New")
	}
	switch f := nodeset.Check(conns); {
	case f == nil:
		return nil
	case f.Kind == nodeset.NilConn:
		return configErrorf("node #%d is a nil driver.Conn", f.Node)
	case f.Kind == nodeset.SameConn:
		return configErrorf("node #%d is the same driver.Conn as node #%d", f.Node, f.Other)
	default:
		return configErrorf("node #%d talks to the same Redis node as node #%d (%s)", f.Node, f.Other, f.ID)
	}
}

// NewMutex returns a mutex on the Redis key name, configured by options.
// Processes that use the same name, through this package or through
// go-redsync/redsync itself, exclude each other.
//
// NewMutex does no I/O and never fails: an invalid option (or a nil one) is
// reported as the error of each call on the mutex that would contact the
// nodes.
func (r *Redsync) NewMutex(name string, options ...Option) *Mutex {
	m := &Mutex{
		name:          name,
		expiry:        defaultExpiry,
		tries:         defaultTries,
		delayFunc:     defaultDelay,
		driftFactor:   defaultDriftFactor,
		timeoutFactor: defaultTimeoutFactor,
		genValueFunc:  genValue,
	}
	if r == nil {
		m.err = configErrorf("NewMutex called on a nil *Redsync")
		return m
	}
	m.nodes, m.err = r.nodes, r.err
	for i, o := range options {
		if o == nil {
			if m.err == nil {
				m.err = configErrorf("option #%d given to NewMutex is nil", i)
			}
			continue
		}
		o.Apply(m)
	}
	m.quorum = quorum.Size(len(m.nodes))
	if m.shuffle {
		// A copy, so that mutexes made from one Redsync never share the
		// order they contact the nodes in.
		m.nodes = append([]*scripts.Node(nil), m.nodes...)
		rand.Shuffle(len(m.nodes), func(i, j int) {
			m.nodes[i], m.nodes[j] = m.nodes[j], m.nodes[i]
		})
	}
	return m
}
