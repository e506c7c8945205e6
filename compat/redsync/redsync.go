package redsync

import (
	"math/rand/v2"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
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

// New returns a Redsync whose mutexes are granted by a majority of pools,
// counted over len(pools) whether or not the nodes are reachable. Each
// pool must reach an independent Redis node; build it from a Redis client
// with NewPool of the matching sub-package of [redis] (goredis/v9, redigo,
// rueidis), or use any locksmith adapter's Conn.
//
// New does no I/O and never fails. When pools is empty, holds a nil pool,
// or holds the same node twice (which would let fewer than a majority of
// real nodes grant a lock), every mutex made from the Redsync reports that
// as the error of each call that would contact the nodes.
func New(pools ...redis.Pool) *Redsync {
	r := &Redsync{err: checkPools(pools)}
	if r.err == nil {
		r.nodes = make([]*scripts.Node, len(pools))
		for i, pool := range pools {
			r.nodes[i] = scripts.NewNode(pool)
		}
	}
	return r
}

func checkPools(pools []redis.Pool) error {
	if len(pools) == 0 {
		return configErrorf("no Redis nodes given to New")
	}
	switch f := nodeset.Check(pools); {
	case f == nil:
		return nil
	case f.Kind == nodeset.NilConn:
		return configErrorf("node #%d is a nil pool", f.Node)
	case f.Kind == nodeset.SameConn:
		return configErrorf("node #%d is the same pool as node #%d", f.Node, f.Other)
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
	if r.nodes == nil && r.err == nil {
		m.err = configErrorf("Redsync not made by New: make one with redsync.New(pools...)")
	}
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
