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

// clusterNode plays a Redis Cluster node for keys in different hash slots:
// it refuses every script with more than one key with CROSSSLOT, as a
// cluster client reports the server's reply, and passes the others on.
type clusterNode struct {
	driver.Conn
	refused atomic.Int64
}

func (c *clusterNode) crossSlot(keys []string) error {
	if len(keys) > 1 {
		c.refused.Add(1)
		return errors.New("CROSSSLOT Keys in request don't hash to the same slot")
	}
	return nil
}

func (c *clusterNode) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	if err := c.crossSlot(keys); err != nil {
		return nil, err
	}
	return c.Conn.Eval(ctx, script, keys, args)
}

func (c *clusterNode) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	if err := c.crossSlot(keys); err != nil {
		return nil, err
	}
	return c.Conn.EvalSha(ctx, sha1, keys, args)
}

// A node that refuses a multi-key lock with CROSSSLOT is the caller's
// mistake, not a node fault: the lock must not quietly run on the other
// nodes without fault tolerance. The call fails at once with an error that
// names the keys and the fix, and the keys the other nodes set are
// released.
func TestCrossSlotFailsTheLockAndReleasesTheOtherNodes(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, tt := range []struct {
		name     string
		opts     []redlock.Option
		keys     []string
		wantKeys string
	}{
		{"plain", nil, []string{"a", "b"}, `"a", "b"`},
		{"fenced", []redlock.Option{redlock.WithFencing()}, []string{"a", "b"}, `"a", "b"`},
		{"long key", nil, []string{"a", long}, `"a", "` + strings.Repeat("x", 64) + `..." (10000 bytes)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3)
			cn := &clusterNode{Conn: c.conns[2]}
			conns := []driver.Conn{c.conns[0], c.conns[1], cn}
			var attempts atomic.Int64
			opts := append([]redlock.Option{
				redlock.WithNodeTimeout(testNodeTimeout),
				countingValues(&attempts),
				redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, 5)),
			}, tt.opts...)
			client, err := redlock.New(conns, opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = client.LockMulti(context.Background(), tt.keys, time.Minute)
			if !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Fatalf("LockMulti with a node answering CROSSSLOT = %v, want ErrInvalidArgument", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "hash tag") || !strings.Contains(msg, tt.wantKeys) {
				t.Errorf("error %q, want one naming the keys %s and the fix, a common hash tag", msg, tt.wantKeys)
			}
			if len(msg) > 1000 {
				t.Errorf("error is %d bytes long, want the long key cut", len(msg))
			}
			if got := attempts.Load(); got != 1 {
				t.Errorf("%d attempts, want 1: retrying cannot help", got)
			}
			for i, s := range c.servers[:2] {
				if keys := s.Keys(); len(keys) > 0 {
					t.Errorf("node %d keeps %d keys after the refused lock", i, len(keys))
				}
			}
		})
	}
}

// Resume is refused the same way when a custom script's extra keys lie in
// another hash slot than the lock key.
func TestCrossSlotFailsResume(t *testing.T) {
	c := newCluster(t, 3)
	conns := []driver.Conn{c.conns[0], c.conns[1], &clusterNode{Conn: c.conns[2]}}
	client, err := redlock.New(conns,
		redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithScripts(redlock.Scripts{
			Extend:    func(def string) string { return def + "\n-- custom\n" },
			ExtraKeys: func([]string) []string { return []string{"audit"} },
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Resume(context.Background(), "k", "v", time.Minute)
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), `keys "k", "audit"`) {
		t.Errorf("Resume with a node answering CROSSSLOT = %v, want ErrInvalidArgument naming the keys", err)
	}
}
