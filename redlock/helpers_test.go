package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	settlepkg "github.com/locksmith-go/locksmith/internal/settle"
	"github.com/locksmith-go/locksmith/redlock"
)

// testNodeTimeout is the per-node timeout of tests that are not about
// timing: long enough that a loaded machine does not turn a slow reply into
// a failure, short enough that a hung node costs little.
const testNodeTimeout = 250 * time.Millisecond

// cluster is a set of in-process Redis nodes, each behind a fault
// injector.
type cluster struct {
	servers []*miniredis.Miniredis
	faults  []*faults.Conn
	conns   []driver.Conn
	clients []*redlock.Client // made by client, waited for by settle
}

func newCluster(t testing.TB, n int) *cluster {
	t.Helper()
	c := &cluster{}
	for range n {
		s := miniredis.RunT(t)
		rc := resp.Dial(s.Addr())
		t.Cleanup(func() { rc.Close() })
		f := faults.Wrap(rc)
		c.servers = append(c.servers, s)
		c.faults = append(c.faults, f)
		c.conns = append(c.conns, f)
	}
	return c
}

func (c *cluster) client(t *testing.T, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	client, err := redlock.New(c.conns, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.clients = append(c.clients, client)
	t.Cleanup(func() { closeClient(t, client) })
	return client
}

// settle waits until no request of the clients made by c.client is
// running: a call returns once a quorum decided it, and the requests to
// the other nodes end in the background.
func (c *cluster) settle(t testing.TB) {
	t.Helper()
	for _, client := range c.clients {
		settle(t, client)
	}
}

// settle waits until no request of client is running.
func settle(t testing.TB, client *redlock.Client) {
	t.Helper()
	if err := settleCtx(context.Background(), client); err != nil {
		t.Fatalf("waiting for the requests of a Client: %v", err)
	}
}

// settleCtx waits until no request of client is running, or ctx ends.
func settleCtx(ctx context.Context, client *redlock.Client) error {
	return settlepkg.Wait(ctx, client)
}

// closeClient closes client: it must end everything it started.
func closeClient(t testing.TB, client *redlock.Client) {
	t.Helper()
	if err := client.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// holders returns how many nodes hold key with value.
func (c *cluster) holders(t *testing.T, key, value string) int {
	t.Helper()
	c.settle(t)
	n := 0
	for _, s := range c.servers {
		if got, err := s.Get(key); err == nil && got == value {
			n++
		}
	}
	return n
}

// keyCount returns the number of keys over all nodes, once the requests
// of the clients made by c.client have ended.
func (c *cluster) keyCount() int {
	for _, client := range c.clients {
		_ = settleCtx(context.Background(), client) // Background never ends
	}
	n := 0
	for _, s := range c.servers {
		n += len(s.Keys())
	}
	return n
}

// setFaults puts the first len(modes) nodes into the given modes.
func (c *cluster) setFaults(modes ...faults.Mode) {
	for i, m := range modes {
		c.faults[i].Set(m)
	}
}

// mustLock acquires key or fails the test, and returns once every node
// has answered: Lock returns when a quorum granted, and a test that then
// changes the nodes must not race with the other nodes' requests.
func mustLock(t *testing.T, c *redlock.Client, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	l, err := c.Lock(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	settle(t, c)
	return l
}

// stallCalls makes the calls to f for which stalls reports true wait until
// release is called; the others pass. stalls may be called from several
// goroutines at once.
func stallCalls(f *faults.Conn, stalls func(method string) bool) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	f.Choose(func(method string) faults.Fault {
		if stalls(method) {
			<-ch
		}
		return faults.Fault{}
	})
	return func() { once.Do(func() { close(ch) }) }
}

// everyCall, given to stallCalls, stalls every call.
func everyCall(string) bool { return true }

// stallUntilReleased is stallCalls with a generous timer that releases the
// calls by itself, so that a call that waits for f fails its test rather
// than hangs. released reports whether the timer had to.
func stallUntilReleased(f *faults.Conn, stalls func(method string) bool) (release func(), released func() bool) {
	free := stallCalls(f, stalls)
	var byTimer atomic.Bool
	timer := time.AfterFunc(10*time.Second, func() {
		byTimer.Store(true)
		free()
	})
	release = func() {
		timer.Stop()
		free()
	}
	return release, byTimer.Load
}

// blockCall makes the next call to f wait until the returned release is
// called; later calls pass.
func blockCall(f *faults.Conn) (release func()) {
	var calls atomic.Int32
	return stallCalls(f, func(string) bool { return calls.Add(1) == 1 })
}
