package redlock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
)

// namedConn is a Conn that reports a NodeID, like the adapters do.
type namedConn struct {
	driver.Conn
	id string
}

func (c *namedConn) NodeID() string { return c.id }

// sliceConn is a Conn whose dynamic type is not comparable.
type sliceConn struct {
	driver.Conn
	_ []int
}

func TestNewRejectsBadInput(t *testing.T) {
	c := newCluster(t, 4)
	a, b := c.conns[0], c.conns[1]
	var typedNil *namedConn
	tests := []struct {
		name  string
		conns []driver.Conn
		opts  []redlock.Option
		want  string
	}{
		{"no conns", nil, nil, "redlock: invalid argument: no nodes given"},
		{"empty conns", []driver.Conn{}, nil, "redlock: invalid argument: no nodes given"},
		{"nil conn", []driver.Conn{a, nil}, nil, "redlock: invalid argument: node 1 is a nil Conn"},
		{"typed nil conn", []driver.Conn{typedNil}, nil, "redlock: invalid argument: node 0 is a nil Conn"},
		{"same conn twice", []driver.Conn{a, b, a}, nil, "redlock: invalid argument: node 2 is the same Conn as node 0"},
		{"same node id twice", []driver.Conn{&namedConn{a, "n1"}, &namedConn{b, "n1"}}, nil,
			"redlock: invalid argument: node 1 talks to the same node as node 0 (n1)"},
		{"two nodes", c.conns[:2], nil,
			"redlock: invalid argument: 2 nodes: a quorum of 2 tolerates no failed node; give an odd number of nodes, or WithEvenNodes(true)"},
		{"four nodes", c.conns, nil,
			"redlock: invalid argument: 4 nodes: a quorum of 3 tolerates 1 failed node, as 3 nodes do; give an odd number of nodes, or WithEvenNodes(true)"},
		{"nil option", []driver.Conn{a}, []redlock.Option{nil}, "redlock: invalid argument: nil Option"},
		{"negative drift factor", []driver.Conn{a}, []redlock.Option{redlock.WithDriftFactor(-0.1)},
			"redlock: invalid argument: drift factor -0.1 is outside [0, 1)"},
		{"drift factor of one", []driver.Conn{a}, []redlock.Option{redlock.WithDriftFactor(1)},
			"redlock: invalid argument: drift factor 1 is outside [0, 1)"},
		{"NaN drift factor", []driver.Conn{a}, []redlock.Option{redlock.WithDriftFactor(math.NaN())},
			"redlock: invalid argument: drift factor NaN is outside [0, 1)"},
		{"zero node timeout", []driver.Conn{a}, []redlock.Option{redlock.WithNodeTimeout(0)},
			"redlock: invalid argument: node timeout 0s must be positive"},
		{"negative node timeout", []driver.Conn{a}, []redlock.Option{redlock.WithNodeTimeout(-time.Second)},
			"redlock: invalid argument: node timeout -1s must be positive"},
		{"nil retry strategy", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(nil)},
			"redlock: invalid argument: nil RetryStrategy"},
		{"negative retry delay", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ConstantBackoff(-time.Millisecond, 0, 3))},
			"redlock: invalid argument: retry delay -1ms is negative"},
		{"negative retry jitter", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ConstantBackoff(0, -time.Millisecond, 3))},
			"redlock: invalid argument: retry jitter -1ms is negative"},
		{"negative retry count", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, -1))},
			"redlock: invalid argument: retry count -1 is negative"},
		{"zero exponential base", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ExponentialBackoff(0, time.Second, 3))},
			"redlock: invalid argument: retry base delay 0s must be positive"},
		{"exponential max below base", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ExponentialBackoff(time.Second, time.Millisecond, 3))},
			"redlock: invalid argument: retry max delay 1ms is below the base delay 1s"},
		{"negative exponential retry count", []driver.Conn{a}, []redlock.Option{redlock.WithRetryStrategy(redlock.ExponentialBackoff(time.Millisecond, time.Second, -2))},
			"redlock: invalid argument: retry count -2 is negative"},
		{"nil value generator", []driver.Conn{a}, []redlock.Option{redlock.WithValueGenerator(nil)},
			"redlock: invalid argument: nil value generator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := redlock.New(tt.conns, tt.opts...)
			if client != nil {
				t.Errorf("New returned a client with error %v", err)
			}
			checkInvalid(t, err, tt.want)
		})
	}
}

// An even number of nodes is accepted when WithEvenNodes says it is
// meant: locks are as safe, only less available than with one node less.
func TestNewAcceptsEvenNodesWhenAllowed(t *testing.T) {
	c := newCluster(t, 4)
	for _, n := range []int{2, 4} {
		client, err := redlock.New(c.conns[:n], redlock.WithEvenNodes(true))
		if err != nil {
			t.Fatalf("New with %d nodes and WithEvenNodes(true): %v", n, err)
		}
		l, err := client.TryLock(context.Background(), "even", time.Minute)
		if err != nil {
			t.Fatalf("TryLock on %d nodes: %v", n, err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock on %d nodes: %v", n, err)
		}
		closeClient(t, client)
	}
}

func TestNewAcceptsIncomparableConns(t *testing.T) {
	c := newCluster(t, 3)
	conns := []driver.Conn{sliceConn{Conn: c.conns[0]}, sliceConn{Conn: c.conns[1]}, sliceConn{Conn: c.conns[2]}}
	if _, err := redlock.New(conns); err != nil {
		t.Fatalf("New with incomparable conns: %v", err)
	}
}

func TestCallsRejectBadInput(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(50*time.Millisecond))
	ctx := context.Background()
	held := mustLock(t, client, "held", time.Minute)
	var nilLock *redlock.Lock
	var nilCtx context.Context

	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"nil ctx", func() error { _, err := client.Lock(nilCtx, "k", time.Second); return err },
			"redlock: invalid argument: nil Context"},
		{"empty key", func() error { _, err := client.Lock(ctx, "", time.Second); return err },
			"redlock: invalid argument: empty key"},
		{"zero ttl", func() error { _, err := client.TryLock(ctx, "k", 0); return err },
			"redlock: invalid argument: ttl 0s is below the 1ms resolution of key expiry"},
		{"negative ttl", func() error { _, err := client.Lock(ctx, "k", -time.Second); return err },
			"redlock: invalid argument: ttl -1s is below the 1ms resolution of key expiry"},
		{"sub-millisecond ttl", func() error { _, err := client.Lock(ctx, "k", 500*time.Microsecond); return err },
			"redlock: invalid argument: ttl 500µs is below the 1ms resolution of key expiry"},
		{"ttl eaten by drift", func() error { _, err := client.Lock(ctx, "k", 2*time.Millisecond); return err },
			"redlock: invalid argument: ttl 2ms leaves no validity after the clock-drift allowance of 2.02ms"},
		{"ttl eaten by node timeout and drift", func() error { _, err := client.Lock(ctx, "k", 52*time.Millisecond); return err },
			"redlock: invalid argument: ttl 52ms leaves no validity after the clock-drift allowance of 2.52ms and the node timeout of 50ms"},
		{"no keys", func() error { _, err := client.LockMulti(ctx, nil, time.Second); return err },
			"redlock: invalid argument: no keys given"},
		{"empty key among keys", func() error { _, err := client.TryLockMulti(ctx, []string{"a", ""}, time.Second); return err },
			"redlock: invalid argument: empty key"},
		{"duplicate keys", func() error { _, err := client.LockMulti(ctx, []string{"a", "b", "a"}, time.Second); return err },
			`redlock: invalid argument: key "a" given twice`},
		{"resume with empty value", func() error { _, err := client.Resume(ctx, "k", "", time.Second); return err },
			"redlock: invalid argument: empty lock value"},
		{"resume with nil ctx", func() error { _, err := client.Resume(nilCtx, "k", "v", time.Second); return err },
			"redlock: invalid argument: nil Context"},
		{"unlock nil lock", func() error { return nilLock.Unlock(ctx) },
			"redlock: invalid argument: Unlock of a nil *Lock"},
		{"extend nil lock", func() error { return nilLock.Extend(ctx, time.Second) },
			"redlock: invalid argument: Extend of a nil *Lock"},
		{"extend with zero ttl", func() error { return held.Extend(ctx, 0) },
			"redlock: invalid argument: ttl 0s is below the 1ms resolution of key expiry"},
		{"unlock with nil ctx", func() error { return held.Unlock(nilCtx) },
			"redlock: invalid argument: nil Context"},
		{"extend with nil ctx", func() error { return held.Extend(nilCtx, time.Second) },
			"redlock: invalid argument: nil Context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkInvalid(t, tt.call(), tt.want)
		})
	}
	if n := c.keyCount(); n != 3 {
		t.Errorf("nodes hold %d keys after rejected calls, want 3 (the held lock only)", n)
	}
	if got := c.holders(t, "held", held.Value()); got != 3 {
		t.Errorf("held lock is on %d nodes after rejected calls, want 3", got)
	}
}

func checkInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %q", want)
	}
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("error %q does not match ErrInvalidArgument", err)
	}
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestReleasedAndExpiredLocksAreRefused(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	ctx := context.Background()

	l := mustLock(t, client, "k", time.Minute)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	calls := c.faults[0].Calls()
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrReleased) || !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("second Unlock = %v, want ErrReleased matching ErrNotHeld", err)
	}
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Extend after Unlock = %v, want ErrReleased", err)
	}
	if got := c.faults[0].Calls(); got != calls {
		t.Errorf("refused calls reached the node: %d calls, want %d", got, calls)
	}
	if !l.ValidUntil().IsZero() || l.TTL() != 0 {
		t.Errorf("released lock: ValidUntil = %v, TTL = %v, want zero", l.ValidUntil(), l.TTL())
	}

	short := mustLock(t, c.client(t, redlock.WithNodeTimeout(10*time.Millisecond)), "short", 50*time.Millisecond)
	time.Sleep(time.Until(short.ValidUntil()))
	calls = c.faults[0].Calls()
	if err := short.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrExpired) || !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend after validity = %v, want ErrExpired matching ErrNotHeld", err)
	}
	if got := c.faults[0].Calls(); got != calls {
		t.Errorf("Extend after validity reached the node: %d calls, want %d", got, calls)
	}
	if short.TTL() != 0 {
		t.Errorf("expired lock TTL = %v, want 0", short.TTL())
	}
}
