package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
)

// serverConn is a driver.ServerIdentifier that reports id as its server's,
// as an adapter does that reads it from the server: only once a call has
// reached the server.
type serverConn struct {
	driver.Conn
	id      string
	reached atomic.Bool
	asked   atomic.Int64 // calls of ServerID
}

func (c *serverConn) ServerID() string {
	c.asked.Add(1)
	if !c.reached.Load() {
		return ""
	}
	return c.id
}

func (c *serverConn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	defer c.reached.Store(true)
	return c.Conn.Eval(ctx, script, keys, args)
}

func (c *serverConn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	defer c.reached.Store(true)
	return c.Conn.EvalSha(ctx, sha1, keys, args)
}

func (c *serverConn) ScriptLoad(ctx context.Context, script string) (string, error) {
	defer c.reached.Store(true)
	return c.Conn.ScriptLoad(ctx, script)
}

// withServerIDs wraps the Conns of c in serverConns reporting ids.
func withServerIDs(c *cluster, ids ...string) ([]driver.Conn, []*serverConn) {
	conns := make([]driver.Conn, len(ids))
	wrapped := make([]*serverConn, len(ids))
	for i, id := range ids {
		wrapped[i] = &serverConn{Conn: c.conns[i], id: id}
		conns[i] = wrapped[i]
	}
	return conns, wrapped
}

// A lock attempt whose round finds two nodes reporting one server fails
// with ErrInvalidArgument, also at the Client's first round, and leaves no
// key behind; nodes that report no server ID, or distinct ones, lock.
func TestSameServer(t *testing.T) {
	tests := []struct {
		name    string
		ids     []string
		fencing bool
		wantErr string // "" for a granted lock
	}{
		{"two nodes of one server", []string{"run-a", "run-a", "run-b"}, false, "node 1 reaches the same server as node 0 (run_id run-a)"},
		{"fenced, two nodes of one server", []string{"run-b", "run-a", "run-a"}, true, "node 2 reaches the same server as node 1 (run_id run-a)"},
		{"distinct servers", []string{"run-a", "run-b", "run-c"}, false, ""},
		{"no server IDs", []string{"", "", "run-a"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, len(tt.ids))
			conns, _ := withServerIDs(c, tt.ids...)
			opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}
			if tt.fencing {
				opts = append(opts, redlock.WithFencing())
			}
			client := newGatedClient(t, conns, opts...)
			l, err := client.Lock(context.Background(), "k", time.Minute)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Lock = %v, want a lock", err)
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				return
			}
			if err == nil {
				// A round returns once a quorum decided it: this one was
				// decided by nodes of distinct servers before the
				// duplicate answered. A quorum that counts one server
				// twice has both answers, so it never grants; the next
				// attempt knows every ID.
				settle(t, client)
				if err := l.Unlock(context.Background()); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				_, err = client.Lock(context.Background(), "k", time.Minute)
			}
			if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Lock error = %v, want one matching ErrInvalidArgument that says %q", err, tt.wantErr)
			}
			settle(t, client)
			for i, s := range c.servers {
				if s.Exists("k") {
					t.Errorf("node %d keeps the lock key after the failed Lock", i)
				}
			}
		})
	}
}

// Once every node reported its server and the servers differ, rounds no
// longer ask.
func TestSameServerCheckedUntilKnown(t *testing.T) {
	c := newCluster(t, 3)
	conns, wrapped := withServerIDs(c, "run-a", "run-b", "run-c")
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(testNodeTimeout))
	mustLock(t, client, "a", time.Minute)
	if wrapped[0].asked.Load() == 0 {
		t.Fatalf("the first Lock did not ask node 0 for its ServerID")
	}
	// A round may return before every node answered: once all have, the
	// next round finds every ID known and distinct.
	settle(t, client)
	mustLock(t, client, "b", time.Minute)
	asked := wrapped[0].asked.Load()
	mustLock(t, client, "c", time.Minute)
	if again := wrapped[0].asked.Load(); again != asked {
		t.Errorf("ServerID of node 0 asked %d times after the second Lock, %d after the first; want no more once all are known", again, asked)
	}
}

// Resume through a Client whose round finds two nodes reporting one
// server fails with ErrInvalidArgument and leaves the lock it was given
// to its holder.
func TestResumeSameServer(t *testing.T) {
	c := newCluster(t, 3)
	l := mustLock(t, c.client(t), "k", time.Minute)
	conns, _ := withServerIDs(c, "run-a", "run-b", "run-a")
	other := newGatedClient(t, conns, redlock.WithNodeTimeout(testNodeTimeout))
	_, err := other.Resume(context.Background(), "k", l.Value(), time.Minute)
	if err == nil {
		// Decided by nodes 0 and 1 before node 2 answered (see
		// TestSameServer): now every Conn knows its ID, so a Client's
		// first round finds them.
		settle(t, other)
		again := newGatedClient(t, conns, redlock.WithNodeTimeout(testNodeTimeout))
		_, err = again.Resume(context.Background(), "k", l.Value(), time.Minute)
	}
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Resume error = %v, want one matching ErrInvalidArgument", err)
	}
	if n := c.holders(t, "k", l.Value()); n != 3 {
		t.Errorf("%d nodes hold the lock after the failed Resume, want 3", n)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}
