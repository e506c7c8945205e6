package behaviour

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// neverPoll is the waiter's retry delay in the hand-off tests: so long
// that a waiter getting the lock within the test can only have been woken
// by the release notification.
const neverPoll = time.Hour

// safetyNet bounds a wait that would hang on a bug; a passing test never
// comes near it.
const safetyNet = time.Minute

// TestHandoffAcrossAdapters has a waiter on one adapter woken by a release
// made through another: the waiter retries only once an hour, so getting
// the lock at all proves the notification reached it. Every ordered pair of
// different adapters runs, on 3 nodes.
func TestHandoffAcrossAdapters(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	for _, waiting := range adapters.All() {
		for _, releasing := range adapters.All() {
			if waiting.Name == releasing.Name {
				continue
			}
			t.Run(waiting.Name+"_woken_by_"+releasing.Name, func(t *testing.T) {
				handoffAcross(t, waiting, releasing, nodes)
			})
		}
	}
}

func handoffAcross(t *testing.T, waiting, releasing adapters.Adapter, nodes []*redisnode.Node) {
	key := locktest.Key(t)
	holder := locktest.Client(t, releasing, nodes)
	var replies atomic.Int64
	var conns []driver.Conn
	for _, c := range locktest.Conns(t, waiting, nodes) {
		n, ok := c.(driver.Notifier)
		if !ok {
			t.Fatalf("%s Conn %T does not implement driver.Notifier", waiting.Name, c)
		}
		conns = append(conns, faults.CountReplies(n, &replies))
	}
	waiter := locktest.NewClient(t, conns, redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 3)))

	held, err := holder.Lock(t.Context(), key, locktest.TTL)
	if err != nil {
		t.Fatalf("holder's Lock: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), safetyNet)
	defer cancel()
	type result struct {
		lock *redlock.Lock
		err  error
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiter.Lock(ctx, key, locktest.TTL)
		done <- result{l, err}
	}()

	// The waiter's first attempt, and the one it makes at once after
	// subscribing, are refused by every node; then it waits.
	channel := "{" + key + "}:released"
	deadline := time.Now().Add(safetyNet)
	for replies.Load() < int64(2*len(nodes)) || !subscribedEverywhere(t, nodes, channel) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d script replies to the waiter, subscribed everywhere: %v", safetyNet, replies.Load(), subscribedEverywhere(t, nodes, channel))
		}
		time.Sleep(time.Millisecond)
	}
	if err := held.Unlock(t.Context()); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter's Lock: %v", r.err)
	}
	// The waiter tries once a majority announced the release, so the
	// last node may still have refused it.
	if got := locktest.Holding(t, nodes, key, r.lock.Value()); got < locktest.Quorum(len(nodes)) {
		t.Errorf("%d of %d nodes hold the waiter's value, want a majority", got, len(nodes))
	}
	if err := r.lock.Unlock(t.Context()); err != nil {
		t.Errorf("waiter's Unlock: %v", err)
	}
	locktest.RequireNoKey(t, nodes, key)
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
