package redlock_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
)

// serverConn is a driver.ServerIdentifier that reports id as its server's,
// as an adapter does that reads it from the server: known once a call has
// been answered, from the call given by knownAt on (0 for the first).
type serverConn struct {
	driver.Conn
	id       string
	knownAt  int64
	answered atomic.Int64 // calls that returned no error
	asked    atomic.Int64 // calls of ServerID
}

func (c *serverConn) ServerID() (string, bool) {
	c.asked.Add(1)
	if c.answered.Load() <= c.knownAt {
		return "", false
	}
	return c.id, true
}

// count records the end of a call with err.
func (c *serverConn) count(err error) {
	if err == nil {
		c.answered.Add(1)
	}
}

func (c *serverConn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := c.Conn.Eval(ctx, script, keys, args)
	c.count(err)
	return reply, err
}

func (c *serverConn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := c.Conn.EvalSha(ctx, sha1, keys, args)
	c.count(err)
	return reply, err
}

func (c *serverConn) ScriptLoad(ctx context.Context, script string) (string, error) {
	digest, err := c.Conn.ScriptLoad(ctx, script)
	c.count(err)
	return digest, err
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

// lateDuplicate delays every call to the last node of ids whose ID an
// earlier node reports too, by far more than the other nodes take to
// answer, so that a round returning at a quorum would decide without it.
// It returns that node, or -1.
func lateDuplicate(c *cluster, ids []string) int {
	late := -1
	for i, id := range ids {
		if id != "" && slices.Contains(ids[:i], id) {
			late = i
		}
	}
	if late >= 0 {
		c.faults[late].Delay(100 * time.Millisecond)
	}
	return late
}

// A lock attempt whose round finds two nodes reporting one server fails
// with ErrInvalidArgument, also at the Client's first round and when the
// duplicate answers last, and leaves no key behind; nodes that report no
// server ID, or distinct ones, lock.
func TestSameServer(t *testing.T) {
	tests := []struct {
		name    string
		ids     []string
		fencing bool
		wantErr string // "" for a granted lock
	}{
		{"two nodes of one server", []string{"run-a", "run-a", "run-b"}, false, "node 1 reaches the same server as node 0 (run_id run-a)"},
		{"fenced, two nodes of one server", []string{"run-b", "run-a", "run-a"}, true, "node 2 reaches the same server as node 1 (run_id run-a)"},
		{"five nodes, two of one server", []string{"run-a", "run-b", "run-c", "run-d", "run-a"}, false, "node 4 reaches the same server as node 0 (run_id run-a)"},
		{"distinct servers", []string{"run-a", "run-b", "run-c"}, false, ""},
		{"no server IDs", []string{"", "", "run-a"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, len(tt.ids))
			conns, _ := withServerIDs(c, tt.ids...)
			lateDuplicate(c, tt.ids)
			opts := []redlock.Option{redlock.WithNodeTimeout(30 * time.Second)}
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
			if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("first Lock error = %v, want one matching ErrInvalidArgument that says %q", err, tt.wantErr)
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

// Once a node's server ID is known, acquires return at a quorum again: a
// slow node no longer holds them. Node 2 reports no ID at all, which is
// known once it answered, so the IDs are never all known.
func TestAcquiresWaitForANodeOnlyUntilItsServerIsKnown(t *testing.T) {
	c := newCluster(t, 3)
	conns, _ := withServerIDs(c, "run-a", "run-b", "")
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(30*time.Second))
	mustLock(t, client, "a", time.Minute)
	release, released := stallUntilReleased(c.faults[1], everyCall)
	defer release()
	if _, err := client.Lock(context.Background(), "b", time.Minute); err != nil {
		t.Fatalf("Lock(b): %v", err)
	}
	if released() {
		t.Fatalf("the second Lock returned only once the stalled node was released; want it decided by the other two")
	}
}

// While a node's server ID is unknown, only the rounds after which the
// IDs are compared wait for it: acquires, not extends or releases.
func TestOnlyAcquiresWaitForAnUnknownServer(t *testing.T) {
	c := newCluster(t, 3)
	conns, wrapped := withServerIDs(c, "run-a", "run-b", "run-c")
	wrapped[2].knownAt = math.MaxInt64 // its ID never becomes known
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(30*time.Second), redlock.WithSkipUnhealthyNodes(false))
	l := mustLock(t, client, "a", time.Minute)
	release, released := stallUntilReleased(c.faults[2], everyCall)
	if err := l.Extend(context.Background(), time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if released() {
		t.Errorf("Extend and Unlock returned only once the node with an unknown server ID was released")
	}
	// An acquire waits for node 2: release it a moment after the Lock
	// started, on another goroutine.
	var freed atomic.Bool
	go func() {
		time.Sleep(100 * time.Millisecond)
		freed.Store(true)
		release()
	}()
	if _, err := client.Lock(context.Background(), "b", time.Minute); err != nil {
		t.Fatalf("Lock(b): %v", err)
	}
	if !freed.Load() {
		t.Errorf("Lock(b) returned before the node with an unknown server ID answered")
	}
}

// A node that learns its server ID only at a later call keeps acquires
// waiting for it until then, and the attempt after which it reports the
// ID of another node fails, however slow the node is.
func TestSameServerFoundWhenItsIDComesLate(t *testing.T) {
	c := newCluster(t, 3)
	conns, wrapped := withServerIDs(c, "run-a", "run-b", "run-a")
	wrapped[2].knownAt = 2 // after its third call: past the first Lock's
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(30*time.Second))
	l, err := client.Lock(context.Background(), "a", time.Minute)
	if err != nil {
		t.Fatalf("first Lock = %v; want it granted, node 2's ID being unknown", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	settle(t, client)
	c.faults[2].Delay(100 * time.Millisecond)
	_, err = client.Lock(context.Background(), "b", time.Minute)
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "node 2 reaches the same server as node 0") {
		t.Errorf("Lock once node 2's ID is known = %v, want one matching ErrInvalidArgument that names nodes 2 and 0", err)
	}
}

// Once every node reported its server and the servers differ, rounds no
// longer ask.
func TestSameServerCheckedUntilKnown(t *testing.T) {
	c := newCluster(t, 3)
	conns, wrapped := withServerIDs(c, "run-a", "run-b", "run-c")
	client := newGatedClient(t, conns, redlock.WithNodeTimeout(testNodeTimeout))
	mustLock(t, client, "a", time.Minute)
	asked := wrapped[0].asked.Load()
	if asked == 0 {
		t.Fatalf("the first Lock did not ask node 0 for its ServerID")
	}
	// The first round waited for every node, so it learned every ID.
	mustLock(t, client, "b", time.Minute)
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
	ids := []string{"run-a", "run-b", "run-a"}
	conns, _ := withServerIDs(c, ids...)
	lateDuplicate(c, ids)
	other := newGatedClient(t, conns, redlock.WithNodeTimeout(30*time.Second))
	_, err := other.Resume(context.Background(), "k", l.Value(), time.Minute)
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

// unknownNode2 returns a cluster of 3 nodes whose node 2 never knows its
// server ID, and a Client over it that skips no node.
func unknownNode2(t *testing.T, opts ...redlock.Option) (*cluster, *redlock.Client) {
	t.Helper()
	c := newCluster(t, 3)
	conns, wrapped := withServerIDs(c, "run-a", "run-b", "run-c")
	wrapped[2].knownAt = math.MaxInt64
	opts = append([]redlock.Option{redlock.WithNodeTimeout(30 * time.Second), redlock.WithSkipUnhealthyNodes(false)}, opts...)
	return c, newGatedClient(t, conns, opts...)
}

// The lock that an acquire or Resume returns does not wait for a node
// whose server ID is unknown in its later rounds, however it was made;
// neither does a fenced Lock's second phase. Node 2 stalls while they run,
// until a generous timer releases it.
func TestLaterRoundsDoNotWaitForAnUnknownServer(t *testing.T) {
	tests := []struct {
		name string
		opts []redlock.Option
		// prepare makes what run needs while node 2 answers, and returns
		// run.
		prepare func(t *testing.T, c *cluster, client *redlock.Client) (run func() error)
		// stallAll stalls every call to node 2 from then on; without it,
		// only its second EvalSha stalls: the fenced Lock's second phase.
		stallAll bool
	}{
		{"Unlock after Lock", nil, func(t *testing.T, _ *cluster, client *redlock.Client) func() error {
			l := mustLock(t, client, "a", time.Minute)
			return func() error { return l.Unlock(context.Background()) }
		}, true},
		{"Unlock after Resume", nil, func(t *testing.T, c *cluster, client *redlock.Client) func() error {
			held := mustLock(t, c.client(t), "a", time.Minute)
			l, err := client.Resume(context.Background(), "a", held.Value(), time.Minute)
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			settle(t, client)
			return func() error { return l.Unlock(context.Background()) }
		}, true},
		{"fenced Lock's second phase", []redlock.Option{redlock.WithFencing()}, func(t *testing.T, _ *cluster, client *redlock.Client) func() error {
			mustLock(t, client, "warm", time.Minute) // the scripts are loaded
			return func() error {
				_, err := client.Lock(context.Background(), "b", time.Minute)
				return err
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, client := unknownNode2(t, tt.opts...)
			run := tt.prepare(t, c, client)
			var evals atomic.Int64
			release, released := stallUntilReleased(c.faults[2], func(method string) bool {
				return tt.stallAll || method == "EvalSha" && evals.Add(1) == 2
			})
			defer release()
			if err := run(); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if released() {
				t.Errorf("%s waited for the node with an unknown server ID", tt.name)
			}
		})
	}
}
