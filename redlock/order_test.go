package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// callLog is a Conn that records when each script call starts and when it
// returns, with the call's lock value.
type callLog struct {
	driver.Conn
	mu     sync.Mutex
	events []string
}

func (c *callLog) add(event string, args []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	op := "release"
	if len(args) > 1 {
		op = "acquire"
	}
	c.events = append(c.events, fmt.Sprintf("%s %s %s", op, args[0], event))
}

func (c *callLog) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	c.add("sent", args)
	defer c.add("returned", args)
	return c.Conn.EvalSha(ctx, sha1, keys, args)
}

func (c *callLog) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	c.add("sent", args)
	defer c.add("returned", args)
	return c.Conn.Eval(ctx, script, keys, args)
}

func (c *callLog) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// loggedClient returns a Client over c's three nodes, with a 30 s node
// timeout, whose calls to node 0 are recorded in rec.
func loggedClient(t *testing.T, c *cluster) (client *redlock.Client, rec *callLog) {
	t.Helper()
	rec = &callLog{Conn: c.conns[0]}
	client, err := redlock.New([]driver.Conn{rec, c.conns[1], c.conns[2]}, redlock.WithNodeTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { settle(t, client) })
	return client, rec
}

// A Client's next lock on a key reaches each node only after the requests
// of its previous lock there have returned, although Unlock returned once
// a quorum had released. Otherwise a grant applied late, or a release not
// yet applied, holds the key on that node when the next lock's acquire
// arrives; two such nodes, left by two earlier locks, refuse a TryLock
// that nothing contends.
func TestNextLockOnAKeyFollowsThePrevious(t *testing.T) {
	c := newCluster(t, 3)
	client, rec := loggedClient(t, c)
	ctx := context.Background()

	// a's acquire on node 0 waits: a is granted by nodes 1 and 2, and
	// released by them.
	release, released := stallUntilReleased(c.faults[0], everyCall)
	a, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock a: %v", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock a: %v", err)
	}
	b, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock b: %v", err)
	}
	release()
	if released() {
		t.Fatal("node 0 stalled until its timer")
	}
	settle(t, client)
	if n := c.holders(t, "k", b.Value()); n != 3 {
		t.Errorf("b is held on %d nodes, want 3", n)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("Unlock b: %v", err)
	}
	settle(t, client)
	want := []string{
		"acquire " + a.Value() + " sent", "acquire " + a.Value() + " returned",
		"release " + a.Value() + " sent", "release " + a.Value() + " returned",
		"acquire " + b.Value() + " sent", "acquire " + b.Value() + " returned",
		"release " + b.Value() + " sent", "release " + b.Value() + " returned",
	}
	if got := rec.log(); !slices.Equal(got, want) {
		t.Errorf("node 0 saw\n\t%q\nwant\n\t%q", got, want)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// An attempt refused while a holds the key does not hide a's later
// requests from the next attempt: the TryLock right after a.Unlock
// reaches node 0 only after a's release there, which it would otherwise
// overtake and be refused by.
func TestNextLockFollowsAReleaseAfterARefusedAttempt(t *testing.T) {
	c := newCluster(t, 3)
	client, rec := loggedClient(t, c)
	ctx := context.Background()

	a, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock a: %v", err)
	}
	settle(t, client)
	// Another goroutine of the program tries k while a holds it.
	if _, err := client.TryLock(ctx, "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock while a holds k: %v, want ErrNotAcquired", err)
	}
	settle(t, client)

	release := blockCall(c.faults[0]) // a's release on node 0
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock a: %v", err)
	}
	b, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock b: %v", err)
	}
	release()
	settle(t, client)
	if n := c.holders(t, "k", b.Value()); n != 3 {
		t.Errorf("b is held on %d nodes, want 3; node 0 saw %q", n, rec.log())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("Unlock b: %v", err)
	}
}

// A lock that skipped a failing node, dropped and collected, does not make
// the next attempt (the node's probe) forget an earlier lock's release
// still running there: the release holds the key's order.
func TestNextLockFollowsAReleaseAcrossACollectedLock(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) { testSkippedLane(t, keep) })
	}
}

func testSkippedLane(t *testing.T, keep bool) {
	const nodeTimeout = 30 * time.Second
	c := newCluster(t, 3)
	rec := &callLog{Conn: c.conns[0]}
	client, clock := newClockedClient(t, []driver.Conn{rec, c.conns[1], c.conns[2]}, redlock.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()

	a, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock a: %v", err)
	}
	settle(t, client)
	// Node 0 fails three requests of other keys: it is failing.
	c.faults[0].Set(faults.Fail)
	for i := range 3 {
		l := mustLock(t, client, fmt.Sprintf("x%d", i), time.Minute)
		_ = l
	}
	settle(t, client)
	c.faults[0].Set(faults.Pass)
	release := blockCall(c.faults[0]) // a's release on node 0
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock a: %v", err)
	}
	// b skips node 0, failing and not due a probe.
	var kept *redlock.Lock
	func() {
		b, err := client.TryLock(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf("TryLock b: %v", err)
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatalf("Unlock b: %v", err)
		}
		if keep {
			kept = b
		}
	}()
	for range 3 {
		runtime.GC()
	}
	clock.Advance(2 * time.Second) // node 0's probe is due; not behind yet
	d, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock d: %v", err)
	}
	release()
	settle(t, client)
	runtime.KeepAlive(kept)
	if n := c.holders(t, "k", d.Value()); n != 3 {
		t.Errorf("d is held on %d nodes, want 3; node 0 saw %q", n, rec.log())
	}
}

// stallNext makes the next call to f wait until release is called;
// entered is closed once that call has reached f. Later calls pass.
func stallNext(f *faults.Conn) (entered <-chan struct{}, release func()) {
	in, free := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	var once sync.Once
	f.Choose(func(string) faults.Fault {
		if calls.Add(1) == 1 {
			close(in)
			<-free
		}
		return faults.Fault{}
	})
	return in, func() { once.Do(func() { close(free) }) }
}

// An attempt whose first request on a node waited for the earlier ones
// there until the per-node timeout passed, and so was not sent, reports
// that node as timed out: not with the round's own deadline, which would
// read as the caller's, and not as having answered, so that its cleanup
// does not wait for the node again.
func TestAttemptNotSentAfterItsWaitIsANodeTimeout(t *testing.T) {
	c := newCluster(t, 1)
	client := c.client(t, redlock.WithNodeTimeout(200*time.Millisecond))
	ctx := context.Background()
	a, err := client.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TryLock a: %v", err)
	}
	settle(t, client)
	entered, release := stallNext(c.faults[0]) // a's release
	defer release()
	unlocked := make(chan error, 1)
	go func() { unlocked <- a.Unlock(ctx) }()
	<-entered
	_, err = client.TryLock(ctx, "k", time.Minute) // waits for a's release; not sent
	release()
	<-unlocked // its release timed out on node 0 while stalled
	if err == nil {
		t.Fatal("TryLock b succeeded while a's release stalled")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock b with context.Background: %v matches context.DeadlineExceeded", err)
	}
	var ne *redlock.NodeError
	if !errors.As(err, &ne) || !errors.Is(ne, redlock.ErrNodeTimeout) {
		t.Errorf("TryLock b: node error %v, want one matching ErrNodeTimeout", ne)
	}
}
