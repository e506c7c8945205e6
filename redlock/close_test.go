package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// Close releases the locks still held, unless WithReleaseOnClose(false)
// leaves them to expire; a second Close returns nil.
func TestCloseReleasesHeldLocks(t *testing.T) {
	for _, release := range []bool{true, false} {
		c := newCluster(t, 3)
		client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithReleaseOnClose(release))
		l := mustLock(t, client, "k", time.Minute)
		ctx := context.Background()
		for range 2 {
			if err := client.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		want := 0
		if !release {
			want = 3
		}
		if got := c.holders(t, "k", l.Value()); got != want {
			t.Errorf("release on close %v: %d nodes hold the lock after Close, want %d", release, got, want)
		}
		if got := l.ValidUntil().IsZero(); got != release {
			t.Errorf("release on close %v: ValidUntil zero after Close %v, want %v", release, got, release)
		}
	}
}

// Close ends a renewal with ErrClosed as its context's cause, and a Lock
// call waiting for a held key with an error matching ErrClosed and
// ErrNotAcquired; calls after it fail with ErrClosed.
func TestCloseEndsRenewalsAndWaits(t *testing.T) {
	c := newCluster(t, 3)
	holder := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	attempted := make(chan struct{}, 1)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithReleaseNotifications(false),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Hour, 0, 1)),
		redlock.WithObserver(observe.Observer{AttemptDone: func(context.Context, observe.RoundInfo) {
			select {
			case attempted <- struct{}{}:
			default:
			}
		}}))
	ctx := context.Background()
	mustLock(t, holder, "busy", time.Minute)
	l := mustLock(t, client, "k", time.Minute)
	<-attempted // k's
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	waited := make(chan error, 1)
	go func() {
		_, err := client.Lock(ctx, "busy", time.Minute)
		waited <- err
	}()
	<-attempted // busy's first attempt, refused: the call waits an hour to retry
	if err := client.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if cause := context.Cause(kctx); !errors.Is(cause, redlock.ErrClosed) {
		t.Errorf("KeepAlive context's cause after Close = %v, want ErrClosed", cause)
	}
	if err := <-waited; !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("Lock waiting for a held key, after Close = %v, want ErrClosed and ErrNotAcquired", err)
	}
	for name, call := range map[string]func() error{
		"TryLock": func() error { _, err := client.TryLock(ctx, "j", time.Minute); return err },
		"Extend":  func() error { return l.Extend(ctx, time.Minute) },
		"Inspect": func() error { _, err := client.Inspect(ctx, "k"); return err },
		"Resume":  func() error { _, err := client.Resume(ctx, "k", l.Value(), time.Minute); return err },
	} {
		if err := call(); !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// A Resume of a held Lock's value on other keys makes a Lock of its own;
// Close still releases the first one.
func TestCloseReleasesALockWhoseValueWasResumedOnOtherKeys(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := context.Background()
	l := mustLock(t, client, "a", time.Minute)
	if _, err := client.Resume(ctx, "b", l.Value(), time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Resume of a's value on b = %v, want ErrNotHeld", err)
	}
	if err := client.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := c.holders(t, "a", l.Value()); got != 0 {
		t.Errorf("%d nodes hold a after Close, want 0", got)
	}
}

// gatedNotifier holds each Subscribe until gate is closed, after telling
// entered.
type gatedNotifier struct {
	driver.Notifier
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g gatedNotifier) Subscribe(ctx context.Context, channel string, deliver func(string)) (func(), error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	return g.Notifier.Subscribe(ctx, channel, deliver)
}

// A Lock call that Close finds subscribing to its key's releases, before
// its first wait, makes no attempt after that: it returns ErrClosed.
func TestCloseDuringTheFirstSubscriptionEndsTheLockCall(t *testing.T) {
	_, conns := notifyingNodes(t, 3)
	entered := make(chan struct{}, 1)
	gate := make(chan struct{})
	gated := make([]driver.Conn, len(conns))
	for i, conn := range conns {
		gated[i] = gatedNotifier{Notifier: conn.(driver.Notifier), entered: entered, gate: gate}
	}
	ctx := context.Background()
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, holder)
	if _, err := holder.Lock(ctx, "k", time.Minute); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	var values atomic.Int64
	client, err := redlock.New(gated, redlock.WithNodeTimeout(testNodeTimeout), countingValues(&values),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 5)))
	if err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() {
		_, err := client.Lock(ctx, "k", time.Minute)
		locked <- err
	}()
	<-entered // refused once, the call subscribes
	closed := make(chan error, 1)
	go func() { closed <- client.Close(ctx) }()
	for {
		if _, err := client.Inspect(ctx, "other"); errors.Is(err, redlock.ErrClosed) {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	if err := <-locked; !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("Lock subscribing when Close was called = %v, want ErrClosed and ErrNotAcquired", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := values.Load(); got != 1 {
		t.Errorf("the Lock call made %d attempts, want 1: none after Close", got)
	}
}

// A Close whose ctx ends while a request it waits for is held up returns
// ctx.Err(); a later Close waits for that request, and the lock is
// released on every node, the one that held the request up included.
func TestCloseAgainAfterItsCtxEnded(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", time.Minute)
	free := stallCalls(c.faults[0], everyCall)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := client.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with its ctx ended while node 0 holds up the release = %v, want context.Canceled", err)
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Unlock after Close = %v, want ErrClosed", err)
	}
	free()
	if err := client.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := c.holders(t, "k", l.Value()); got != 0 {
		t.Errorf("%d nodes hold k after the second Close, want 0", got)
	}
}

// A lock that a Lock call in flight when Close was called gets is
// released by Close.
func TestCloseReleasesALockGrantedWhileItRuns(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(time.Minute))
	var frees []func()
	entered := make(chan struct{}, 3)
	for _, f := range c.faults {
		var calls atomic.Int32
		frees = append(frees, stallCalls(f, func(string) bool {
			if calls.Add(1) == 1 {
				entered <- struct{}{}
				return true
			}
			return false
		}))
	}
	ctx := context.Background()
	locked := make(chan *redlock.Lock, 1)
	go func() {
		l, err := client.Lock(ctx, "k", time.Hour)
		if err != nil {
			t.Errorf("Lock in flight when Close was called: %v", err)
		}
		locked <- l
	}()
	for range c.faults {
		<-entered
	}
	closed := make(chan error, 1)
	go func() { closed <- client.Close(ctx) }()
	for {
		if _, err := client.Inspect(ctx, "other"); errors.Is(err, redlock.ErrClosed) {
			break
		}
		runtime.Gosched()
	}
	for _, free := range frees {
		free()
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	l := <-locked
	if l == nil {
		return
	}
	if got := c.holders(t, "k", l.Value()); got != 0 {
		t.Errorf("%d nodes hold k after Close, want 0", got)
	}
	if !l.ValidUntil().IsZero() {
		t.Errorf("ValidUntil after Close = %v from now, want zero", time.Until(l.ValidUntil()))
	}
}

// Close ends a Lock call waiting for a release notification, and the
// call's subscriptions with it.
func TestCloseEndsAWaitForANotification(t *testing.T) {
	servers, conns := notifyingNodes(t, 3)
	ctx := context.Background()
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, holder)
	if _, err := holder.Lock(ctx, "k", time.Minute); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	var values atomic.Int64
	client, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout), countingValues(&values),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 5)))
	if err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() {
		_, err := client.Lock(ctx, "k", time.Minute)
		locked <- err
	}()
	// The call subscribes after its first attempt, tries once more at
	// once, and then waits.
	eventually(t, "the second attempt and the subscriptions", func() bool {
		return values.Load() == 2 && allEqual(subscribers(servers, "k"), 1)
	})
	if err := client.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-locked; !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("Lock waiting for a notification, after Close = %v, want ErrClosed and ErrNotAcquired", err)
	}
	// The server learns of the end of a subscription a moment later.
	eventually(t, "subscriptions ended", func() bool { return allEqual(subscribers(servers, "k"), 0) })
}

// An Extend waiting for the turn of another extend round when Close is
// called returns ErrClosed, as a Lock call waiting to retry does, rather
// than start its round once the other has ended.
func TestCloseEndsAnExtendWaitingForItsTurn(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(10*time.Second))
	l := mustLock(t, client, "k", time.Minute)
	ctx := context.Background()
	entered := make(chan struct{}, 3)
	var frees []func()
	for _, f := range c.faults {
		var calls atomic.Int32
		frees = append(frees, stallCalls(f, func(string) bool {
			if calls.Add(1) == 1 {
				entered <- struct{}{}
			}
			return true
		}))
	}
	first := make(chan error, 1)
	go func() { first <- l.Extend(ctx, time.Minute) }()
	for range c.faults {
		<-entered // the first Extend's round holds the turn
	}
	second := make(chan error, 1)
	waiting := make(chan struct{})
	go func() { second <- l.Extend(doneWatch{ctx, waiting, new(sync.Once)}, time.Minute) }()
	<-waiting // the second Extend waits for its turn
	closed := make(chan error, 1)
	go func() { closed <- client.Close(ctx) }()
	for {
		kctx, stop := l.KeepAlive(ctx)
		stop()
		if errors.Is(context.Cause(kctx), redlock.ErrClosed) {
			break
		}
		runtime.Gosched()
	}
	for _, free := range frees {
		free()
	}
	if err := <-first; err != nil {
		t.Errorf("Extend whose round ran when Close was called: %v", err)
	}
	if err := <-second; !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Extend waiting for its turn when Close was called = %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// doneWatch is a Context that closes called the first time its Done
// method is, as a call does once it waits on the Context.
type doneWatch struct {
	context.Context
	called chan struct{}
	once   *sync.Once
}

func (d doneWatch) Done() <-chan struct{} {
	d.once.Do(func() { close(d.called) })
	return d.Context.Done()
}
