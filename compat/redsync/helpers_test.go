package redsync_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cluster is a set of in-process Redis nodes, each behind a fault
// injector.
type cluster struct {
	servers []*miniredis.Miniredis
	faults  []*faults.Conn
	conns   []driver.Conn
}

func newCluster(t *testing.T, n int) *cluster {
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

func (c *cluster) redsync() *redsync.Redsync {
	return redsync.New(c.conns...)
}

// holders returns how many nodes hold key with value.
func (c *cluster) holders(key, value string) int {
	n := 0
	for _, s := range c.servers {
		if got, err := s.Get(key); err == nil && got == value {
			n++
		}
	}
	return n
}

// keyCount returns the number of keys over all nodes.
func (c *cluster) keyCount() int {
	n := 0
	for _, s := range c.servers {
		n += len(s.Keys())
	}
	return n
}

// set stores key with value and ttl on the first n nodes, as another
// process holding the lock would.
func (c *cluster) set(t *testing.T, n int, key, value string, ttl time.Duration) {
	t.Helper()
	for _, s := range c.servers[:n] {
		if err := s.Set(key, value); err != nil {
			t.Fatalf("Set(%q): %v", key, err)
		}
		s.SetTTL(key, ttl)
	}
}

// expire makes every key on every node expire, as if the TTL had run out.
func (c *cluster) expire(ttl time.Duration) {
	for _, s := range c.servers {
		s.FastForward(ttl)
	}
}

// calls returns the number of calls that reached the nodes.
func (c *cluster) calls() int64 {
	var n int64
	for _, f := range c.faults {
		n += f.Calls()
	}
	return n
}

func (c *cluster) setFaults(modes ...faults.Mode) {
	for i, m := range modes {
		c.faults[i].Set(m)
	}
}

// mustLock locks m or fails the test.
func mustLock(t *testing.T, m *redsync.Mutex) {
	t.Helper()
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock(%q): %v", m.Name(), err)
	}
}

// waitFor polls cond until it holds, and fails the test if it does not
// within ten seconds. It never decides a test's outcome by time: it only
// bounds a wait for something the test arranged to happen.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not reached within 10s")
			return
		}
		time.Sleep(time.Millisecond)
	}
}
