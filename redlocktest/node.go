package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/internal/resp"
)

// ErrStopped is matched by the error of a request to a node that
// [Node.Stop] has stopped.
var ErrStopped = errors.New("redlocktest: node stopped")

// A Node is one in-process Redis server of a [Cluster] with switchable
// faults. Its faults act on the requests sent through its Conn
// ([Node.Conn]); Stop, Start and Forget also act on the server itself, so
// a client of your own dialled to [Node.Addr] sees them too. Nodes come
// from [Cluster.Nodes]; the methods of a nil or zero Node do nothing.
type Node struct {
	cluster *Cluster
	index   int
	srv     *miniredis.Miniredis
	conn    *conn

	mu      sync.Mutex
	addr    string
	raw     *resp.Notifier // the client of addr
	stopped bool
	resumed chan struct{} // non-nil while the node hangs; closed by Resume
	delay   time.Duration

	// applying counts the requests let through to the server that have
	// not returned; settled is signalled whenever it drops to 0.
	applying int
	settled  *sync.Cond
}

// begin and end bracket a request let through to the server.
func (n *Node) begin() {
	n.mu.Lock()
	n.applying++
	n.mu.Unlock()
}

func (n *Node) end() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.applying--; n.applying == 0 {
		n.settled.Broadcast()
	}
}

// settle waits until no request let through to the server is running. A
// redlock call returns once a quorum decided it, and its requests to the
// other nodes may still be on their way; the reads of the test helpers
// wait for them, so that what they see does not depend on the schedule.
// A request held back by Hang is not waited for: it reaches the server
// only after Resume.
func (n *Node) settle() {
	n.cluster.settle()
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.applying > 0 {
		n.settled.Wait()
	}
}

func startNode(c *Cluster, index int, manualClock, notify bool) (*Node, error) {
	srv := miniredis.NewMiniRedis()
	srv.ClockTTL(!manualClock)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("redlocktest: starting node %d: %w", index, err)
	}
	n := &Node{cluster: c, index: index, srv: srv, addr: srv.Addr(), raw: resp.DialNotifier(srv.Addr())}
	n.settled = sync.NewCond(&n.mu)
	n.conn = &conn{node: n}
	if notify {
		n.conn.notifier = &notifier{conn: n.conn}
	}
	return n, nil
}

// missing reports whether n is nil or a zero Node, which has no server: its
// methods then do nothing and return zero values.
func (n *Node) missing() bool { return n == nil || n.srv == nil }

// close resumes the requests held by Hang, so that no goroutine stays
// blocked, and shuts the server down.
func (n *Node) close() {
	n.mu.Lock()
	if n.resumed != nil {
		close(n.resumed)
		n.resumed = nil
	}
	n.stopped = true
	raw := n.raw
	n.mu.Unlock()
	n.srv.Close()
	raw.Close()
}

// Addr returns the server's address, for a Redis client of your own. It
// changes only when Start or Forget finds the old port taken by another
// process.
func (n *Node) Addr() string {
	if n.missing() {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// admit lets a request through once the node's faults allow it, and
// returns the client to send it with; the caller then calls n.end when the
// request has returned.
func (n *Node) admit(ctx context.Context) (*resp.Notifier, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	resumed, delay := n.resumed, n.delay
	n.mu.Unlock()
	if resumed != nil {
		select {
		case <-resumed:
		case <-ctx.Done():
			return nil, fmt.Errorf("redlocktest: node %d hangs: %w", n.index, ctx.Err())
		}
	}
	// From here the request counts as on its way to the server (settle
	// waits for it); the caller calls n.end once it has returned.
	n.begin()
	if delay > 0 {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			n.end()
			return nil, fmt.Errorf("redlocktest: node %d is slow: %w", n.index, ctx.Err())
		}
	}
	n.mu.Lock()
	raw, stopped := n.raw, n.stopped
	n.mu.Unlock()
	if stopped {
		n.end()
		return nil, fmt.Errorf("node %d: %w", n.index, ErrStopped)
	}
	return raw, nil
}

// Stop shuts the server down, as a crash would: its connections close, and
// requests fail with an error matching [ErrStopped] until Start. The data
// stays, as on a server that persists every write.
func (n *Node) Stop() {
	if n.missing() {
		return
	}
	n.settle() // the fault comes after the requests already on their way
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.stopped = true
	n.srv.Close()
	// Idle connections to the stopped server are dead: drop them, so that
	// requests after Start dial afresh.
	n.raw.Close()
}

// Start restarts a stopped server with the data it had. Like a restarted
// Redis server it has forgotten its scripts, so the first request of each
// Client finds NOSCRIPT and sends the script again. Start does nothing on a
// running node.
func (n *Node) Start() {
	if n.missing() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		return
	}
	n.restartLocked()
}

// Forget restarts the server without its data, as a Redis server without
// persistence comes back from a crash: every key and script is gone. A
// stopped node is started empty.
func (n *Node) Forget() {
	if n.missing() {
		return
	}
	n.settle() // the fault comes after the requests already on their way
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		n.srv.Close()
		n.raw.Close()
	}
	n.srv.FlushAll()
	n.restartLocked()
}

// restartLocked starts the server on its old port, or on a new one when
// another process took the old one, and flushes its scripts.
func (n *Node) restartLocked() {
	n.raw.Close()
	if err := n.srv.Restart(); err != nil {
		if err := n.srv.StartAddr("127.0.0.1:0"); err != nil {
			n.cluster.fail(fmt.Errorf("redlocktest: restarting node %d: %w", n.index, err))
			return
		}
	}
	if addr := n.srv.Addr(); addr != n.addr {
		n.addr = addr
		n.raw = resp.DialNotifier(addr)
	}
	n.stopped = false
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.raw.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		n.cluster.fail(fmt.Errorf("redlocktest: flushing the scripts of node %d: %w", n.index, err))
	}
}

// Hang makes the node hold every request it receives, unanswered, until
// Resume, as a server that is paused or cut off by the network: a Client
// sees the node time out. New subscriptions to release notifications hang
// too.
func (n *Node) Hang() {
	if n.missing() {
		return
	}
	n.settle() // the fault comes after the requests already on their way
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resumed == nil {
		n.resumed = make(chan struct{})
	}
}

// Resume ends Hang: the requests held are sent on to the server, those
// whose context has not ended yet get their replies, and the following
// requests pass at once.
func (n *Node) Resume() {
	if n.missing() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resumed != nil {
		close(n.resumed)
		n.resumed = nil
	}
}

// Slow delays every request to the node by d before sending it on, or
// until its context ends. Slow(0) ends the delay. A negative d fails the
// test and changes nothing.
func (n *Node) Slow(d time.Duration) {
	if n.missing() {
		return
	}
	if d < 0 {
		n.cluster.fail(fmt.Errorf("redlocktest: Slow(%v): the delay is negative", d))
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delay = d
}

// Advance moves the server's clock forward by d: keys with at most d of
// their TTL left expire. A negative d fails the test and changes nothing.
func (n *Node) Advance(d time.Duration) {
	if n.missing() {
		return
	}
	if d < 0 {
		n.cluster.fail(fmt.Errorf("redlocktest: Advance(%v): time cannot go back", d))
		return
	}
	n.settle() // the keys of requests on their way expire too
	n.srv.FastForward(d)
}

// Keys returns the names of the keys the server holds, sorted, once the
// requests that reached it have returned. It works on a stopped or hanging
// node too.
func (n *Node) Keys() []string {
	if n.missing() {
		return nil
	}
	n.settle()
	return n.srv.Keys()
}

// Get returns the value of a string key, and whether the server holds it,
// once the requests that reached it have returned.
func (n *Node) Get(key string) (string, bool) {
	if n.missing() {
		return "", false
	}
	n.settle()
	v, err := n.srv.Get(key)
	return v, err == nil
}

// holding returns the keys that hold value, once the requests that
// reached the server have returned.
func (n *Node) holding(value string) []string {
	n.settle()
	var keys []string
	for _, k := range n.srv.Keys() {
		if v, ok := n.Get(k); ok && v == value {
			keys = append(keys, k)
		}
	}
	return keys
}
