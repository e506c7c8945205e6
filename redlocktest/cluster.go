package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/settle"
	"github.com/locksmith-go/locksmith/redlock"
)

// A Cluster is a set of in-process Redis nodes. Lock clients made from it
// ([Cluster.Client], or redlock.New over [Cluster.Conns]) treat each node as
// an independent Redis server. Make one with New or Start: a zero Cluster
// has no nodes, and the methods of a nil one do nothing (Close returns an
// error).
type Cluster struct {
	t     testing.TB // nil for a Cluster made by Start
	nodes []*Node

	mu      sync.Mutex
	errs    []error // what went wrong, for Close, when t is nil
	closed  bool
	clients []*redlock.Client // made by Client, waited for by settle
}

// settle waits until no request of the Clients made by [Cluster.Client]
// runs; then each node's own settle waits for what reached its server.
func (c *Cluster) settle() {
	c.mu.Lock()
	clients := c.clients
	c.mu.Unlock()
	for _, client := range clients {
		_ = settle.Wait(context.Background(), client) // Background never ends
	}
}

var errNilCluster = errors.New("redlocktest: nil Cluster")

// An Option configures New and Start.
type Option interface {
	apply(*config)
}

type config struct {
	manualClock     bool
	noNotifications bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithManualClock stops the servers' clocks: keys expire only when the
// test moves time forward with [Cluster.Advance] or [Node.Advance].
// Default: the clocks follow the wall clock.
func WithManualClock() Option {
	return optionFunc(func(c *config) { c.manualClock = true })
}

// WithoutNotifications makes the nodes' Conns plain driver.Conns, without
// driver.Notifier, so that waiting Lock calls poll as they do on a client
// that cannot subscribe. Default: the Conns deliver release notifications.
func WithoutNotifications() Option {
	return optionFunc(func(c *config) { c.noNotifications = true })
}

// New starts n nodes for the test t and shuts them down with t.Cleanup:
// once the test and its subtests are done, every server and connection is
// closed and requests held by [Node.Hang] are let go, so no goroutine of the
// Cluster is left. A bad argument to a method of the Cluster or its nodes
// fails t. New stops the test when n is below 1 or a server cannot start.
// t must not be nil.
func New(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c, err := start(t, n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Start starts n nodes outside a test, for an example, a benchmark's setup
// or a TestMain that shares one Cluster among tests. Close shuts them down
// and reports what went wrong in between, bad arguments included. It fails
// when n is below 1 or a server cannot start.
func Start(n int, opts ...Option) (*Cluster, error) {
	return start(nil, n, opts)
}

func start(t testing.TB, n int, opts []Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redlocktest: %d nodes: need at least 1", n)
	}
	var cfg config
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("redlocktest: nil Option")
		}
		o.apply(&cfg)
	}
	c := &Cluster{t: t}
	for i := range n {
		node, err := startNode(c, i, cfg.manualClock, !cfg.noNotifications)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, node)
	}
	return c, nil
}

// fail reports err: to the test, or to Close.
func (c *Cluster) fail(err error) {
	if c.t != nil {
		c.t.Helper()
		c.t.Error(err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// Close shuts every node down and lets go the requests held by
// [Node.Hang]; they fail with an error matching [ErrStopped]. For a Cluster
// made by Start it returns the errors met since it started (bad arguments,
// failed restarts), joined; for one made by New those went to the test, and
// the Cleanup that New registered calls Close. Calling Close again does
// nothing.
func (c *Cluster) Close() error {
	if c == nil {
		return errNilCluster
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	for _, n := range c.nodes {
		n.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// Nodes returns the nodes, in the order of Conns.
func (c *Cluster) Nodes() []*Node {
	if c == nil {
		return nil
	}
	return append([]*Node(nil), c.nodes...)
}

// Conns returns the nodes' Conns, for redlock.New or a wrapper of your own.
// Each call returns a new slice of the same Conns.
func (c *Cluster) Conns() []driver.Conn {
	if c == nil {
		return nil
	}
	conns := make([]driver.Conn, len(c.nodes))
	for i, n := range c.nodes {
		conns[i] = n.Conn()
	}
	return conns
}

// Client returns a new redlock.Client over all the nodes, made with opts.
// When redlock.New rejects the options, Client stops the test of a Cluster
// made by New, like t.Fatal, so call it from the test's goroutine; on a
// Cluster made by Start it returns nil and Close reports the error.
func (c *Cluster) Client(opts ...redlock.Option) *redlock.Client {
	if c == nil {
		return nil
	}
	client, err := redlock.New(c.Conns(), opts...)
	if err != nil {
		if c.t != nil {
			c.t.Helper()
			c.t.Fatal(err)
		}
		c.fail(err)
		return nil
	}
	c.mu.Lock()
	c.clients = append(c.clients, client)
	c.mu.Unlock()
	return client
}

// Advance moves the clock of every node forward by d, as [Node.Advance]
// does: keys with at most d of their TTL left expire. A lock's own validity
// (Lock.ValidUntil) is measured by the client and does not move.
func (c *Cluster) Advance(d time.Duration) {
	if c == nil {
		return
	}
	for _, n := range c.nodes {
		n.Advance(d)
	}
}

// LoseLock makes lock be lost: it deletes the keys holding lock's value
// (Lock.Value) from a majority of the nodes, as if they had expired there
// or been restarted without persistence. The holder finds out at its next
// extension: Lock.Extend fails with redlock.ErrNotHeld, and the renewal of
// Client.Do and Lock.KeepAlive cancels the context it handed out with
// redlock.ErrLockLost as the cause. Fencing counters are left alone.
//
// It works on stopped and hanging nodes too. A nil lock fails the test.
func (c *Cluster) LoseLock(lock *redlock.Lock) {
	if c == nil {
		return
	}
	if lock == nil {
		c.fail(errors.New("redlocktest: LoseLock(nil)"))
		return
	}
	if len(c.nodes) == 0 {
		c.fail(errors.New("redlocktest: LoseLock on a Cluster without nodes"))
		return
	}
	value := lock.Value()
	for _, n := range c.nodes[:len(c.nodes)/2+1] {
		for _, k := range n.holding(value) {
			n.srv.Del(k)
		}
	}
}

// Holders returns how many nodes hold every key of lock with lock's value:
// a majority while the lock is held, none once it is released or expired
// everywhere. A nil lock fails the test.
//
// A redlock call returns once a quorum decided it, while its requests to
// the other nodes may still be on their way. Holders, LoseLock, Advance and
// the Node methods that read keys first wait for them, so that what they
// see and do does not depend on the schedule: for the Clients made by
// [Cluster.Client], for every request they sent (one held back by Node.Hang
// until its per-node timeout); for other Clients, for the requests that
// reached the servers.
func (c *Cluster) Holders(lock *redlock.Lock) int {
	if c == nil {
		return 0
	}
	if lock == nil {
		c.fail(errors.New("redlocktest: Holders(nil)"))
		return 0
	}
	value, want := lock.Value(), len(lock.Keys())
	holders := 0
	for _, n := range c.nodes {
		if len(n.holding(value)) == want {
			holders++
		}
	}
	return holders
}
