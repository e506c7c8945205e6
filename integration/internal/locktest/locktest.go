// Package locktest holds what the integration tests share: building a
// redlock.Client over real nodes through one adapter, naming keys, and
// inspecting the nodes with raw commands that bypass the library.
//
// # Errors
//
// Every function taking a testing.TB fails the test with t.Fatalf on an
// unexpected error, so it must be called from the test's goroutine.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/settle"
	"github.com/locksmith-go/locksmith/redlock"
)

// Generous settings for tests that are not about timing: the machine is
// small and shared, so a node may be slow to answer for reasons that have
// nothing to do with the code under test.
const (
	// NodeTimeout is the per-node timeout of the clients built by NewClient.
	NodeTimeout = 250 * time.Millisecond
	// TTL is a lock lifetime no test waits out.
	TTL = 10 * time.Second
)

// Conns returns one Conn per node through adapter a, in node order.
func Conns(t testing.TB, a adapters.Adapter, nodes []*redisnode.Node, opts ...adapters.Option) []driver.Conn {
	t.Helper()
	conns := make([]driver.Conn, len(nodes))
	for i, n := range nodes {
		conns[i] = a.Conn(t, n.Addr(), opts...)
	}
	return conns
}

// NewClient returns a redlock.Client over conns with [NodeTimeout] and a
// short constant retry delay, followed by opts. [Settle], and the functions
// here that read the nodes, wait for its requests until the test ends; the
// test's cleanup closes it, so that nothing of it outlives the test.
func NewClient(t testing.TB, conns []driver.Conn, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	all := append([]redlock.Option{
		redlock.WithNodeTimeout(NodeTimeout),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(20*time.Millisecond, 20*time.Millisecond, 10)),
	}, opts...)
	c, err := redlock.New(conns, all...)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	tracked.Lock()
	tracked.clients[c] = struct{}{}
	tracked.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("closing a Client: %v", err)
		}
		tracked.Lock()
		delete(tracked.clients, c)
		tracked.Unlock()
	})
	return c
}

// tracked holds the Clients that Settle waits for.
var tracked = struct {
	sync.Mutex
	clients map[*redlock.Client]struct{}
}{clients: make(map[*redlock.Client]struct{})}

// Settle waits until no request of a tracked Client runs. A call returns
// once a quorum decided it, and its requests to the other nodes may still
// be on their way: reading the nodes before they end would see a schedule,
// not the outcome.
func Settle(t testing.TB) {
	t.Helper()
	tracked.Lock()
	clients := make([]*redlock.Client, 0, len(tracked.clients))
	for c := range tracked.clients {
		clients = append(clients, c)
	}
	tracked.Unlock()
	for _, c := range clients {
		wait(t, c)
	}
}

func wait(t testing.TB, c *redlock.Client) {
	t.Helper()
	// Every request is bounded by its node timeout; the limit only turns
	// a bug into a failure instead of a hang.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := settle.Wait(ctx, c); err != nil {
		t.Fatalf("waiting for the requests of a Client: %v", err)
	}
}

// Client is [NewClient] over [Conns].
func Client(t testing.TB, a adapters.Adapter, nodes []*redisnode.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	return NewClient(t, Conns(t, a, nodes), opts...)
}

// Key returns a resource name no other test uses: the test's name and a
// random suffix, so tests sharing nodes never collide and a leftover key
// names the test that left it.
func Key(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "it:" + strings.NewReplacer(" ", "_", "/", ":").Replace(t.Name()) + ":" + hex.EncodeToString(b)
}

// Quorum is the majority of n nodes.
func Quorum(n int) int { return n/2 + 1 }

// Get returns the value of key on each node (nil where it is absent), read
// with a raw GET.
func Get(t testing.TB, nodes []*redisnode.Node, key string) []any {
	t.Helper()
	Settle(t)
	out := make([]any, len(nodes))
	for i, n := range nodes {
		out[i] = n.Do(t, "GET", key)
	}
	return out
}

// Holding returns how many nodes store value under key.
func Holding(t testing.TB, nodes []*redisnode.Node, key, value string) int {
	t.Helper()
	held := 0
	for _, v := range Get(t, nodes, key) {
		if v == value {
			held++
		}
	}
	return held
}

// RequireHeldBy fails the test unless at least a quorum of nodes store value
// under key.
func RequireHeldBy(t testing.TB, nodes []*redisnode.Node, key, value string) {
	t.Helper()
	if got, want := Holding(t, nodes, key, value), Quorum(len(nodes)); got < want {
		t.Fatalf("%d of %d nodes hold %s=%q, want at least %d; values: %v", got, len(nodes), key, value, want, Get(t, nodes, key))
	}
}

// RequireNoKey fails the test if any node has key, checked with EXISTS.
func RequireNoKey(t testing.TB, nodes []*redisnode.Node, key string) {
	t.Helper()
	Settle(t)
	for i, n := range nodes {
		if got := n.Do(t, "EXISTS", key); got != int64(0) {
			t.Errorf("node %d (%s): EXISTS %s = %v, want 0 (value %v)", i, n.Addr(), key, got, n.Do(t, "GET", key))
		}
	}
}

// Keys returns the sorted keys matching pattern on node n (KEYS pattern).
func Keys(t testing.TB, n *redisnode.Node, pattern string) []string {
	t.Helper()
	Settle(t)
	reply, ok := n.Do(t, "KEYS", pattern).([]any)
	if !ok {
		t.Fatalf("%s: KEYS %s did not reply with an array", n.Addr(), pattern)
	}
	keys := make([]string, len(reply))
	for i, k := range reply {
		keys[i] = fmt.Sprint(k)
	}
	slices.Sort(keys)
	return keys
}

// RequireEmpty fails the test if any node has a key at all (KEYS *).
func RequireEmpty(t testing.TB, nodes []*redisnode.Node) {
	t.Helper()
	for i, n := range nodes {
		if keys := Keys(t, n, "*"); len(keys) > 0 {
			t.Errorf("node %d (%s) has keys %q, want none", i, n.Addr(), keys)
		}
	}
}

// PTTL returns the remaining time to live of key on node n, or a negative
// duration as Redis reports one (-2: no key, -1: no expiry).
func PTTL(t testing.TB, n *redisnode.Node, key string) time.Duration {
	t.Helper()
	Settle(t)
	ms, ok := n.Do(t, "PTTL", key).(int64)
	if !ok {
		t.Fatalf("%s: PTTL %s did not reply with an integer", n.Addr(), key)
	}
	if ms < 0 {
		return time.Duration(ms)
	}
	return time.Duration(ms) * time.Millisecond
}

// busyScript keeps a server busy for ARGV[1] microseconds by its own clock,
// bounded by an iteration count; other clients' commands wait meanwhile.
const busyScript = `
local t0 = redis.call('TIME')
local start = t0[1] * 1000000 + t0[2]
for i = 1, 100000000 do
  local t = redis.call('TIME')
  if t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1]) then return i end
end
return -1`

// Busy makes node run a script that keeps it busy for d and returns a
// channel that yields the script's error, if any, once it has ended. It
// returns once the node has stopped answering other clients.
func Busy(t testing.TB, node *redisnode.Node, d time.Duration) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
		defer cancel()
		_, err := node.DoContext(ctx, "EVAL", busyScript, 0, d.Microseconds())
		done <- err
	}()
	for {
		if IsBusy(node) {
			return done
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the busy script ended before the node was seen busy: %v", node.Addr(), err)
		default:
		}
	}
}

// IsBusy reports whether node leaves a PING unanswered for 200ms, as it
// does while it runs a script. It may be called from any goroutine.
func IsBusy(node *redisnode.Node) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := node.DoContext(ctx, "PING")
	return err != nil
}
