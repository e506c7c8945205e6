package redlock_test

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// causeConn is a Conn that fails every call with err while err is set,
// hangs until the call's ctx ends while hang is set, and forwards calls
// otherwise.
type causeConn struct {
	driver.Conn
	mu      sync.Mutex
	err     error
	hang    bool
	hangErr error // what a call that hung returns; its ctx's error when nil
}

func (c *causeConn) set(err error, hang bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err, c.hang = err, hang
}

func (c *causeConn) fault(ctx context.Context) error {
	c.mu.Lock()
	err, hang, hangErr := c.err, c.hang, c.hangErr
	c.mu.Unlock()
	if hang {
		<-ctx.Done()
		if hangErr != nil {
			return hangErr
		}
		return ctx.Err()
	}
	return err
}

func (c *causeConn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	if err := c.fault(ctx); err != nil {
		return nil, err
	}
	return c.Conn.Eval(ctx, script, keys, args)
}

func (c *causeConn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	if err := c.fault(ctx); err != nil {
		return nil, err
	}
	return c.Conn.EvalSha(ctx, sha1, keys, args)
}

func (c *causeConn) ScriptLoad(ctx context.Context, script string) (string, error) {
	if err := c.fault(ctx); err != nil {
		return "", err
	}
	return c.Conn.ScriptLoad(ctx, script)
}

// newCauseCluster returns a cluster of three nodes whose third node is a
// causeConn, and a Client over them with the node timeout of the tests.
func newCauseCluster(t *testing.T, opts ...redlock.Option) (*cluster, *causeConn, *redlock.Client) {
	t.Helper()
	c := newCluster(t, 3)
	node := &causeConn{Conn: c.conns[2]}
	c.conns[2] = node
	return c, node, c.client(t, append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
}

// lockAndUnlock takes and releases a lock on key, and waits until every
// request of it has returned, so that the nodes' health counts them.
func lockAndUnlock(t *testing.T, c *cluster, client *redlock.Client, key string) {
	t.Helper()
	ctx := context.Background()
	l, err := client.TryLock(ctx, key, time.Minute)
	if err != nil {
		t.Fatalf("TryLock(%s): %v", key, err)
	}
	c.settle(t)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock(%s): %v", key, err)
	}
	c.settle(t)
}

// tryHeldOnNode0 makes a TryLock that node 0 refuses, so that the round
// waits for node 2's reply, and returns node 2's entry in its error.
func tryHeldOnNode0(t *testing.T, c *cluster, client *redlock.Client) *redlock.NodeError {
	t.Helper()
	if err := c.servers[0].Set("k", "another owner"); err != nil {
		t.Fatal(err)
	}
	_, err := client.TryLock(context.Background(), "k", time.Minute)
	return nodeEntry(t, err, 2)
}

// nodeEntry returns the NodeError of node in err, a QuorumError.
func nodeEntry(t *testing.T, err error, node int) *redlock.NodeError {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v, want a QuorumError", err)
	}
	for _, ne := range qe.Errors {
		if ne.Node == node {
			return ne
		}
	}
	t.Fatalf("error %q, want an entry for node %d", err, node)
	return nil
}

// A node skipped as failing is reported with its last error, which stays
// in the error's chain, and since when it has failed; not as a request
// that was not sent, which reads like a bug.
func TestSkippedNodeNamesItsLastError(t *testing.T) {
	refused := errors.New("dial tcp 10.0.0.2:6379: connect: connection refused")
	c, node, client := newCauseCluster(t)
	clock := faults.NewClock(time.Date(2026, 1, 2, 12, 0, 1, 200_000_000, time.Local))
	redlock.SetHealthClock(client, clock.Now)
	node.set(refused, false)
	for _, key := range []string{"a", "b"} {
		lockAndUnlock(t, c, client, key)
	}
	ne := tryHeldOnNode0(t, c, client)
	if !errors.Is(ne, redlock.ErrNodeSkipped) || !errors.Is(ne, refused) {
		t.Errorf("node 2: %v, want it matching ErrNodeSkipped and its last error", ne)
	}
	pattern := `^node 2: skipped, failing since 12:00:01\.2 \([0-9]+ failures\): ` + regexp.QuoteMeta(refused.Error()) + "$"
	if !regexp.MustCompile(pattern).MatchString(ne.Error()) {
		t.Errorf("node 2: %q, want it matching %q", ne.Error(), pattern)
	}
}

// An error reply of a node (NOAUTH here) is not lost behind the timeouts
// of its later requests: the timeout names it.
func TestTimeoutNamesTheNodesLastError(t *testing.T) {
	noAuth := errors.New("NOAUTH Authentication required.")
	c, node, client := newCauseCluster(t)
	node.set(noAuth, false)
	lockAndUnlock(t, c, client, "a")
	node.set(nil, true)
	ne := tryHeldOnNode0(t, c, client)
	if !errors.Is(ne, redlock.ErrNodeTimeout) || !errors.Is(ne, noAuth) {
		t.Errorf("node 2: %v, want it matching ErrNodeTimeout and the NOAUTH reply", ne)
	}
	if errors.Is(ne, context.DeadlineExceeded) {
		t.Errorf("node 2: %v, matching context.DeadlineExceeded although the caller's ctx has no deadline", ne)
	}
	pattern := `^node 2: node timeout 250ms exceeded, failing since [0-9:.]+ \([0-9]+ failures?\): NOAUTH Authentication required\.$`
	if !regexp.MustCompile(pattern).MatchString(ne.Error()) {
		t.Errorf("node 2: %q, want it matching %q", ne.Error(), pattern)
	}
}

// A network timeout of the node's client at the node timeout ("i/o
// timeout") is no cause: it loses no earlier error reply.
func TestNetworkTimeoutKeepsTheNodesLastError(t *testing.T) {
	c, node, client := newCauseCluster(t)
	node.set(errors.New("NOAUTH Authentication required."), false)
	lockAndUnlock(t, c, client, "a")
	node.mu.Lock()
	node.err, node.hang, node.hangErr = nil, true, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	node.mu.Unlock()
	got := tryHeldOnNode0(t, c, client).Error()
	want := `^node 2: node timeout 250ms exceeded, failing since [0-9:.]+ \([0-9]+ failures?\): NOAUTH Authentication required\.$`
	if !regexp.MustCompile(want).MatchString(got) {
		t.Errorf("%q, want it matching %q", got, want)
	}
}

// A timeout says whether the node had ever answered: one that never did
// has no connection, one that did is connected but slow.
func TestTimeoutSaysWhetherTheNodeAnswered(t *testing.T) {
	for _, answered := range []bool{false, true} {
		c, node, client := newCauseCluster(t)
		if answered {
			lockAndUnlock(t, c, client, "a")
		}
		node.set(nil, true)
		ne := tryHeldOnNode0(t, c, client)
		got := ne.Error()
		want := "node 2: node timeout 250ms exceeded: the node never answered"
		if answered {
			want = "node 2: node timeout 250ms exceeded: no reply, though the node answered before"
		}
		if got != want {
			t.Errorf("answered before %v: %q, want %q", answered, got, want)
		}
		if strings.Count(got, "250ms") != 1 {
			t.Errorf("%q names the timeout more than once", got)
		}
	}
}
