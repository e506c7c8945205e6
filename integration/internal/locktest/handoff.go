package locktest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// NeverPoll is a retry delay so long that a waiter getting the lock within
// a test can only have been woken by a release notification.
const NeverPoll = time.Hour

// safetyNet bounds the waits of [Waiter]; a passing test never comes near
// it.
const safetyNet = time.Minute

// waiterNodeTimeout is the per-node timeout of a [Waiter]'s Client.
const waiterNodeTimeout = 2 * time.Second

// Waiter is a Lock call running in the background on a Client that polls
// only every [NeverPoll], over Conns that count their script replies.
type Waiter struct {
	replies atomic.Int64
	done    chan waitResult
}

type waitResult struct {
	lock *redlock.Lock
	err  error
}

// StartWaiter starts a Lock call on key over conns, which must implement
// driver.Notifier, with a retry delay of [NeverPoll].
func StartWaiter(t *testing.T, conns []driver.Conn, key string) *Waiter {
	t.Helper()
	w := &Waiter{done: make(chan waitResult, 1)}
	counted := make([]driver.Conn, len(conns))
	for i, c := range conns {
		n, ok := c.(driver.Notifier)
		if !ok {
			t.Fatalf("Conn %T does not implement driver.Notifier", c)
		}
		counted[i] = faults.CountReplies(n, &w.replies)
	}
	// Every attempt goes to every node, so that AwaitWaiting can count
	// the replies: on a busy host a late reply would otherwise make the
	// Client skip a node as behind in its next attempt. The per-node
	// timeout also bounds each node's subscription, which opens a
	// connection; one that timed out would leave the waiter polling only,
	// so it gets longer than NodeTimeout.
	client := NewClient(t, counted, redlock.WithReleaseNotifications(true), redlock.WithSkipUnhealthyNodes(false),
		redlock.WithNodeTimeout(waiterNodeTimeout), redlock.WithRetryStrategy(redlock.ConstantBackoff(NeverPoll, 0, 3)))
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	t.Cleanup(cancel)
	go func() {
		l, err := client.Lock(ctx, key, TTL)
		w.done <- waitResult{l, err}
	}()
	return w
}

// AwaitWaiting returns once the waiter's first attempt, and the one it
// makes at once after subscribing, have been answered by every node, each
// followed by the release of the failed attempt on every node, and every
// node has a subscriber on key's release channel: from then on only a
// release notification can give it the lock before [NeverPoll].
func (w *Waiter) AwaitWaiting(t *testing.T, nodes []*redisnode.Node, key string) {
	t.Helper()
	channel := "{" + key + "}:released"
	deadline := time.Now().Add(safetyNet)
	for w.replies.Load() < int64(4*len(nodes)) || !subscribedEverywhere(t, nodes, channel) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d script replies to the waiter, subscribed everywhere: %v", safetyNet, w.replies.Load(), subscribedEverywhere(t, nodes, channel))
		}
		time.Sleep(time.Millisecond)
	}
}

// HandOver unlocks held and returns the lock the waiter gets then, failing
// the test when either call fails.
func (w *Waiter) HandOver(t *testing.T, held *redlock.Lock) *redlock.Lock {
	t.Helper()
	if err := held.Unlock(t.Context()); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	r := <-w.done
	if r.err != nil {
		t.Fatalf("waiter's Lock: %v", r.err)
	}
	return r.lock
}

// subscribedEverywhere reports whether every node has a subscriber on
// channel.
func subscribedEverywhere(t *testing.T, nodes []*redisnode.Node, channel string) bool {
	t.Helper()
	for _, n := range nodes {
		reply, ok := n.Do(t, "PUBSUB", "NUMSUB", channel).([]any)
		if !ok || len(reply) != 2 || reply[1] != int64(1) {
			return false
		}
	}
	return true
}
