package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
	"github.com/locksmith-go/locksmith/redlocktest"
)

// waitLimit ends a test that would otherwise hang; no test expects to get
// near it.
const waitLimit = 10 * time.Second

// mustLock acquires key or stops the test.
func mustLock(t *testing.T, client *redlock.Client, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	lock, err := client.Lock(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	return lock
}

// nodeTimeout is the per-node timeout of tests with short TTLs: long
// enough that a loaded machine does not turn a slow reply into a failure.
const nodeTimeout = 250 * time.Millisecond

func TestClientLocksOnEveryNode(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client()
	ctx := context.Background()

	lock := mustLock(t, client, "invoice:42", time.Minute)
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("Holders after Lock = %d, want 3", got)
	}
	for i, n := range nodes.Nodes() {
		if v, ok := n.Get("invoice:42"); !ok || v != lock.Value() {
			t.Errorf("node %d holds %q (%v), want the lock's value", i, v, ok)
		}
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if got := nodes.Holders(lock); got != 0 {
		t.Errorf("Holders after Unlock = %d, want 0", got)
	}
}

func TestConnsAreTheNodesConns(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	conns := nodes.Conns()
	if len(conns) != 3 {
		t.Fatalf("len(Conns()) = %d, want 3", len(conns))
	}
	for i, n := range nodes.Nodes() {
		if conns[i] != n.Conn() {
			t.Errorf("Conns()[%d] is not Nodes()[%d].Conn()", i, i)
		}
		if _, ok := conns[i].(driver.Notifier); !ok {
			t.Errorf("Conns()[%d] is a %T, not a driver.Notifier", i, conns[i])
		}
	}
	// The same node given twice is refused, as by redlock.New.
	if _, err := redlock.New([]driver.Conn{conns[0], conns[0]}); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("redlock.New with a node twice: %v, want ErrInvalidArgument", err)
	}
}

func TestClientTakesOptions(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client(redlock.WithFencing(), redlock.WithKeyPrefix("billing:"))
	ctx := context.Background()
	lock := mustLock(t, client, "invoice:42", time.Minute)
	defer lock.Unlock(ctx)
	if lock.Token() != 1 {
		t.Errorf("Token = %d, want 1", lock.Token())
	}
	if v, ok := nodes.Nodes()[0].Get("billing:invoice:42"); !ok || v != lock.Value() {
		t.Errorf("billing:invoice:42 holds %q (%v), want the lock's value", v, ok)
	}
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) driver.Conn {
		return redlocktest.New(t, 1).Conns()[0]
	})
}

func TestWithoutNotifications(t *testing.T) {
	nodes := redlocktest.New(t, 3, redlocktest.WithoutNotifications())
	for i, c := range nodes.Conns() {
		if _, ok := c.(driver.Notifier); ok {
			t.Errorf("Conns()[%d] is a driver.Notifier", i)
		}
	}
	// Waiters poll, and still get the lock once it is released.
	client := nodes.Client(redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 0, 100_000)))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	held := mustLock(t, client, "report", time.Minute)
	got := make(chan error, 1)
	go func() {
		lock, err := client.Lock(ctx, "report", time.Minute)
		if err == nil {
			err = lock.Unlock(ctx)
		}
		got <- err
	}()
	held.Unlock(ctx)
	if err := <-got; err != nil {
		t.Errorf("waiter: %v", err)
	}
}

// A waiter that would poll once an hour gets the lock as soon as it is
// released: the nodes deliver release notifications.
func TestFastHandoff(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	holder := nodes.Client()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	held, err := holder.Lock(ctx, "invoice:42", time.Minute)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	attempts := make(chan int, 8)
	waiter := nodes.Client(
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Hour, 0, 3)),
		redlock.WithObserver(observe.Observer{
			AttemptDone: func(_ context.Context, info observe.RoundInfo) { attempts <- info.Attempt },
		}))
	got := make(chan error, 1)
	go func() {
		lock, err := waiter.Lock(ctx, "invoice:42", time.Minute)
		if err == nil {
			err = lock.Unlock(ctx)
		}
		got <- err
	}()
	// Release only once the waiter has made its attempts and waits for
	// the release (the first attempt, then one more once subscribed).
	<-attempts
	<-attempts
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v, want the lock well before its hour-long retry delay", err)
	}
}
