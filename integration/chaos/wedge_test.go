package chaos

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// A change of toxics that never returns, as toxiproxy's deadlock makes
// one, holds the proxy's toxic collection lock for good. Here the lock is
// held until the test ends, and a client held in the accept loop keeps
// the old proxy from stopping. The harness replaces the proxy on the same
// address, closes the connections through the old one (a subscriber's
// too), and goes on: the clear leaves no toxic, the add puts its toxic on
// the new proxy, and a stopped proxy's clear leaves one that reopen
// accepts as started.
func TestWedgedProxyIsReplaced(t *testing.T) {
	tests := []struct {
		name       string
		stopped    bool // the proxy is stopped before the change, as around a black hole
		change     func(c *cluster) error
		wantToxics int
	}{
		{"clear", false, func(c *cluster) error { c.clearToxics(0); return nil }, 0},
		{"add", false, func(c *cluster) error { return c.addToxic(0, "late", "latency", "downstream", `{"latency":1}`) }, 1},
		{"clear of a stopped proxy", true, func(c *cluster) error { c.clearToxics(0); return c.reopen(0) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, 1, redisnode.Config{})
			addr := c.addrs()[0]
			old := dialPing(t, addr)
			sub := dial(t, addr)
			if sub == nil {
				t.FailNow()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := sub.Do(ctx, "SUBSCRIBE", "chaos:wedge"); err != nil {
				t.Fatalf("SUBSCRIBE: %v", err)
			}
			if tt.stopped {
				c.dropConnections(0)
			}
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			wedged := make(chan struct{})
			// Only the first change wedges.
			var changes atomic.Int32
			c.change = func(p *toxiproxy.Proxy, do func()) {
				if changes.Add(1) > 1 {
					do()
					return
				}
				p.Toxics.Lock()
				defer p.Toxics.Unlock()
				if !tt.stopped {
					// A client connecting now holds the proxy's
					// accept loop, and so its Stop, until the lock is
					// free.
					dial(t, addr)
					waitForAcceptBlocked(t)
				}
				close(wedged)
				<-release
			}
			bounds := 0
			c.wedged = func() <-chan struct{} {
				if bounds++; bounds > 1 {
					return nil // wait for the change
				}
				return wedged
			}
			if err := tt.change(c); err != nil {
				t.Fatalf("change of a wedged proxy: %v", err)
			}
			if c.replaced != 1 {
				t.Fatalf("%d proxies replaced, want 1", c.replaced)
			}
			if got := c.addrs()[0]; got != addr {
				t.Errorf("the new proxy listens on %s, want the old address %s", got, addr)
			}
			if n := len(c.proxies[0].Toxics.GetToxicArray()); n != tt.wantToxics {
				t.Errorf("the new proxy has %d toxics, want %d", n, tt.wantToxics)
			}
			for name, conn := range map[string]*resp.Wire{"a connection": old, "a subscriber": sub} {
				switch reply, err := conn.Do(ctx, "PING"); {
				case err == nil:
					t.Errorf("%s through the wedged proxy still answers: %v", name, reply)
				case errors.Is(err, context.DeadlineExceeded):
					t.Errorf("%s through the wedged proxy hangs, not closed", name)
				}
			}
			dialPing(t, addr)
		})
	}
}

// dial opens a connection to addr and closes it when the test ends.
func dial(t *testing.T, addr string) *resp.Wire {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := resp.DialWire(ctx, addr, nil)
	if err != nil {
		t.Errorf("dial %s: %v", addr, err)
		return nil
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// dialPing opens a connection to addr, checks that it answers PING, and
// closes it when the test ends.
func dialPing(t *testing.T, addr string) *resp.Wire {
	t.Helper()
	conn := dial(t, addr)
	if conn == nil {
		t.FailNow()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if reply, err := conn.Do(ctx, "PING"); err != nil || reply != "PONG" {
		t.Fatalf("PING through %s = %v, %v; want PONG", addr, reply, err)
	}
	return conn
}

// waitForAcceptBlocked waits, for at most a minute, until a proxy's
// accept loop is blocked on its toxic collection's lock in StartLink. A
// count of goroutines in StartLink does not tell this: the accept loop
// may still be leaving the StartLink of an earlier client when the count
// is taken, after that StartLink has unlocked.
func waitForAcceptBlocked(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if acceptBlocked() {
			return
		}
	}
	t.Errorf("no accept loop blocked in StartLink after a minute")
}

// acceptBlocked reports whether some goroutine waits for a mutex inside
// toxiproxy's StartLink.
func acceptBlocked() bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for n == len(buf) {
		buf = make([]byte, 2*len(buf))
		n = runtime.Stack(buf, true)
	}
	for _, g := range bytes.Split(buf[:n], []byte("\n\n")) {
		if bytes.Contains(g, []byte("toxiproxy/v2.(*ToxicCollection).StartLink(")) &&
			bytes.Contains(g, []byte("sync.(*Mutex).Lock")) {
			return true
		}
	}
	return false
}
