package redlock_test

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/internal/scripts"
	"github.com/locksmith-go/locksmith/redlock"
)

// neverPoll is a retry delay so long that a waiter that gets the lock
// within a test can only have been woken by a release notification.
const neverPoll = time.Hour

// safetyNet bounds a test that would otherwise hang on a bug. It is no
// timing assertion: the tests never wait that long when they pass.
const safetyNet = time.Minute

// notifyingNodes starts n in-process nodes reached through Conns that
// implement driver.Notifier.
func notifyingNodes(t *testing.T, n int) ([]*miniredis.Miniredis, []driver.Conn) {
	t.Helper()
	var servers []*miniredis.Miniredis
	var conns []driver.Conn
	for range n {
		s := miniredis.RunT(t)
		conn := resp.DialNotifier(s.Addr())
		t.Cleanup(func() { conn.Close() })
		servers = append(servers, s)
		conns = append(conns, conn)
	}
	return servers, conns
}

// countingValues returns a value generator that counts its calls, one per
// lock attempt.
func countingValues(calls *atomic.Int64) redlock.Option {
	return redlock.WithValueGenerator(func() (string, error) {
		calls.Add(1)
		return rand.Text(), nil
	})
}

// countReplies wraps conns, which must be *resp.Notifiers, to count the
// script replies they return.
func countReplies(conns []driver.Conn, replies *atomic.Int64) []driver.Conn {
	out := make([]driver.Conn, len(conns))
	for i, c := range conns {
		out[i] = faults.CountReplies(c.(*resp.Notifier), replies)
	}
	return out
}

// subscribers returns how many subscribers each server has on key's release
// channel.
func subscribers(servers []*miniredis.Miniredis, key string) []int {
	channel := scripts.ReleaseChannel(key)
	counts := make([]int, len(servers))
	for i, s := range servers {
		counts[i] = s.PubSubNumSub(channel)[channel]
	}
	return counts
}

// eventually polls cond until it holds, failing the test at the safety net.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(safetyNet)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %s", safetyNet, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// handoffScene is a lock on "res" held through one Client and a second
// Client, waiting with an hour's retry delay, whose attempts are counted.
type handoffScene struct {
	servers  []*miniredis.Miniredis
	conns    []driver.Conn // the holder's
	held     *redlock.Lock
	waiter   *redlock.Client
	attempts atomic.Int64
	replies  atomic.Int64 // script replies to the waiter
}

func newHandoffScene(t *testing.T, nodes int, opts ...redlock.Option) *handoffScene {
	t.Helper()
	sc := &handoffScene{}
	var conns []driver.Conn
	sc.servers, conns = notifyingNodes(t, nodes)
	sc.conns = conns
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	// The waiter sends every attempt to every node, so that its replies
	// can be counted: on a busy host a late reply would otherwise make it
	// skip a node as behind in its next attempt.
	opts = append([]redlock.Option{redlock.WithReleaseNotifications(true), redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithSkipUnhealthyNodes(false),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 3)), countingValues(&sc.attempts)}, opts...)
	if sc.waiter, err = redlock.New(countReplies(conns, &sc.replies), opts...); err != nil {
		t.Fatal(err)
	}
	sc.held = mustLock(t, holder, "res", 10*time.Second)
	return sc
}

type lockResult struct {
	lock *redlock.Lock
	err  error
}

// lockAsync runs Lock in a goroutine and returns where its result arrives.
func lockAsync(ctx context.Context, c *redlock.Client, key string) <-chan lockResult {
	done := make(chan lockResult, 1)
	go func() {
		l, err := c.Lock(ctx, key, 10*time.Second)
		done <- lockResult{l, err}
	}()
	return done
}

func receive(t *testing.T, done <-chan lockResult) lockResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(safetyNet):
		t.Fatalf("Lock did not return within %v", safetyNet)
		return lockResult{}
	}
}

func allEqual(counts []int, want int) bool {
	for _, c := range counts {
		if c != want {
			return false
		}
	}
	return true
}

// A waiter whose retry delay is an hour gets the lock as soon as its holder
// releases it, which only the release notification can explain, and its
// subscriptions end with its Lock call.
func TestReleaseNotificationWakesWaiter(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "1 node", 3: "3 nodes"}[n], func(t *testing.T) {
			sc := newHandoffScene(t, n)
			servers, waiter, held, attempts, replies := sc.servers, sc.waiter, sc.held, &sc.attempts, &sc.replies

			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			defer cancel()
			done := lockAsync(ctx, waiter, "res")
			// The first attempt, then one more at once after subscribing,
			// both refused by every node and released on every node.
			eventually(t, "waiter made two attempts and subscribed on every node", func() bool {
				return replies.Load() == int64(4*n) && allEqual(subscribers(servers, "res"), 1)
			})
			if err := held.Unlock(context.Background()); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			r := receive(t, done)
			if r.err != nil {
				t.Fatalf("waiting Lock: %v", r.err)
			}
			if got := attempts.Load(); got != 3 {
				t.Errorf("waiter made %d attempts, want 3: two before the release, one after", got)
			}
			eventually(t, "subscriptions ended with the Lock call", func() bool {
				return allEqual(subscribers(servers, "res"), 0)
			})
			if err := r.lock.Unlock(context.Background()); err != nil {
				t.Errorf("Unlock: %v", err)
			}
		})
	}
}

// A waiter woken by a majority's announcements whose attempt is refused on
// one of the nodes that announced (as when it skips that node as behind,
// or fails on it) is woken again when the last node announces the release,
// and gets the lock then, not at the end of its hour's retry delay.
// Before, it heard nothing more of that release and waited the hour.
func TestReleaseNotificationWakesARefusedWaiterAgain(t *testing.T) {
	sc := newHandoffScene(t, 3, redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 10)))
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	done := lockAsync(ctx, sc.waiter, "res")
	eventually(t, "waiter made two attempts and subscribed on every node", func() bool {
		return sc.replies.Load() == 12 && allEqual(subscribers(sc.servers, "res"), 1)
	})

	value := sc.held.Value()
	sum := sha1.Sum([]byte(value))
	tag := hex.EncodeToString(sum[:])[:16]
	release := func(node int) {
		t.Helper()
		n, err := sc.conns[node].Eval(context.Background(), scripts.Release.Source(), []string{"res"}, []string{value})
		if err != nil || n != int64(1) {
			t.Fatalf("release on node %d = %v, %v; want 1", node, n, err)
		}
	}
	// Node 0 releases; node 1 announces the release but still holds the
	// key, so the attempt that the majority wakes is refused there.
	release(0)
	if got := sc.servers[1].Publish(scripts.ReleaseChannel("res"), tag); got != 1 {
		t.Fatalf("announcement on node 1 reached %d subscribers, want 1", got)
	}
	eventually(t, "woken attempt refused and released", func() bool {
		return sc.attempts.Load() == 3 && sc.replies.Load() == 18
	})
	select {
	case r := <-done:
		t.Fatalf("Lock returned %v before node 2 released", r.err)
	default:
	}

	release(2)
	r := receive(t, done)
	if r.err != nil {
		t.Fatalf("waiting Lock: %v", r.err)
	}
	if got := sc.attempts.Load(); got != 4 {
		t.Errorf("waiter made %d attempts, want 4: two before the release, one at the majority, one at the last node", got)
	}
	if err := r.lock.Unlock(context.Background()); err != nil {
		t.Errorf("waiter's Unlock: %v", err)
	}
	if err := sc.held.Unlock(context.Background()); err != nil {
		t.Errorf("holder's Unlock of node 1: %v", err)
	}
}

// Waiters of one Client queue up: each release wakes only the head of the
// queue, which makes one attempt and gets the lock, and the waiters get the
// lock in the order they started waiting. Releases are told apart by the
// whole value, so values that share their last characters, such as those
// of a generator that appends the host name, each wake a waiter too.
func TestReleaseNotificationWakesOneWaiterInOrder(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values func(*atomic.Int64) redlock.Option
	}{
		{"random values", countingValues},
		{"values sharing their last characters", suffixedValues},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var attempts atomic.Int64
			wakeInOrder(t, newHandoffScene(t, 3, tt.values(&attempts)), &attempts)
		})
	}
}

// suffixedValues is countingValues with values "<n>-<random>@web-host".
func suffixedValues(calls *atomic.Int64) redlock.Option {
	return redlock.WithValueGenerator(func() (string, error) {
		return fmt.Sprintf("%d-%s@web-host", calls.Add(1), rand.Text()), nil
	})
}

// wakeInOrder queues four waiters of sc, whose attempts are counted by
// attempts, then releases the lock four times, each by its last holder.
func wakeInOrder(t *testing.T, sc *handoffScene, attempts *atomic.Int64) {
	const waiters = 4
	servers, client, held := sc.servers, sc.waiter, sc.held

	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var results []<-chan lockResult
	for i := range waiters {
		results = append(results, lockAsync(ctx, client, "res"))
		// The first waiter subscribes and tries again at once; each
		// later one makes a single attempt before it waits.
		want := int64(i + 2)
		eventually(t, "waiter queued and made its attempts", func() bool {
			return redlock.Waiting(client, "res") == i+1 && attempts.Load() == want
		})
	}
	eventually(t, "one subscription per node", func() bool { return allEqual(subscribers(servers, "res"), 1) })

	release := held.Unlock
	for i, done := range results {
		before := attempts.Load()
		if err := release(context.Background()); err != nil {
			t.Fatalf("Unlock before waiter %d: %v", i, err)
		}
		r := receive(t, done)
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		if got := attempts.Load() - before; got != 1 {
			t.Errorf("release %d led to %d attempts, want 1", i, got)
		}
		release = r.lock.Unlock
	}
	if err := release(context.Background()); err != nil {
		t.Errorf("last Unlock: %v", err)
	}
	eventually(t, "subscriptions ended", func() bool { return allEqual(subscribers(servers, "res"), 0) })
}

// With notifications turned off, a waiter never subscribes: it polls, so
// with an hour's delay it is still waiting when its ctx is cancelled.
func TestReleaseNotificationsOff(t *testing.T) {
	sc := newHandoffScene(t, 3, redlock.WithReleaseNotifications(false))
	servers, waiter, held, attempts := sc.servers, sc.waiter, sc.held, &sc.attempts
	defer held.Unlock(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	done := lockAsync(ctx, waiter, "res")
	eventually(t, "first attempt", func() bool { return attempts.Load() == 1 })
	if got := subscribers(servers, "res"); !allEqual(got, 0) {
		t.Errorf("subscribers per node = %v with notifications off, want none", got)
	}
	cancel()
	r := receive(t, done)
	if !errors.Is(r.err, redlock.ErrNotAcquired) || !errors.Is(r.err, context.Canceled) {
		t.Errorf("Lock = %v, want ErrNotAcquired and context.Canceled", r.err)
	}
	if got := attempts.Load(); got != 1 {
		t.Errorf("%d attempts, want 1: no retry before the hour is up", got)
	}
}

// A waiter that gives up leaves the queue; the subscriptions end with the
// last waiter, and a later waiter subscribes again and is woken.
func TestReleaseNotificationAfterWaiterGaveUp(t *testing.T) {
	sc := newHandoffScene(t, 3)
	servers, waiter, held, attempts := sc.servers, sc.waiter, sc.held, &sc.attempts

	ctx, cancel := context.WithCancel(context.Background())
	first := lockAsync(ctx, waiter, "res")
	eventually(t, "first waiter subscribed", func() bool { return allEqual(subscribers(servers, "res"), 1) })
	cancel()
	if r := receive(t, first); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", r.err)
	}
	eventually(t, "subscriptions ended", func() bool { return allEqual(subscribers(servers, "res"), 0) })

	ctx2, cancel2 := context.WithTimeout(context.Background(), safetyNet)
	defer cancel2()
	before := attempts.Load()
	second := lockAsync(ctx2, waiter, "res")
	eventually(t, "second waiter subscribed and tried twice", func() bool {
		return attempts.Load() == before+2 && allEqual(subscribers(servers, "res"), 1)
	})
	if err := held.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := receive(t, second)
	if r.err != nil {
		t.Fatalf("second waiter: %v", r.err)
	}
	r.lock.Unlock(context.Background())
}
