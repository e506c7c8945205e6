package quorum

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
)

// A node is behind once a request of a returned round has been running
// for more than the limit since, and stays so until its stragglers have
// all ended; a node whose stragglers end in time never is.
func TestLagFindsANodeBehind(t *testing.T) {
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	lag := NewLag(3)
	lag.Now = clock.Now
	var tracker Tracker
	s := newStalls(2)
	run := func() []Reply {
		r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Lag: lag, Tracker: &tracker}
		return r.Run(context.Background())
	}
	if lag.Behind(2, time.Second) {
		t.Fatal("a node behind before any round")
	}
	s.started.Add(1) // two rounds stall on node 2
	for range 2 {
		if replies := run(); !errors.Is(replies[2].Err, ErrPending) {
			t.Fatalf("node 2 answered %v, want ErrPending", replies[2])
		}
	}
	s.started.Wait()
	if got := lag.Stragglers(2); got != 2 {
		t.Errorf("Stragglers(2) = %d, want 2", got)
	}
	if got := lag.Stragglers(0); got != 0 {
		t.Errorf("Stragglers(0) = %d, want 0", got)
	}
	clock.Advance(time.Second)
	if lag.Behind(2, time.Second) {
		t.Error("node 2 behind when its oldest straggler is exactly at the limit")
	}
	clock.Advance(time.Millisecond)
	if !lag.Behind(2, time.Second) {
		t.Error("node 2 not behind with stragglers past the limit")
	}
	if lag.Behind(0, time.Second) || lag.Behind(1, time.Second) {
		t.Error("a node that answered in time is behind")
	}
	if !lag.Behind(2, time.Hour) {
		t.Error("node 2 no longer behind, under a longer limit, while its stragglers run")
	}
	close(s.release)
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := lag.Stragglers(2); got != 0 {
		t.Errorf("Stragglers(2) after the stalls ended = %d, want 0", got)
	}
	if lag.Behind(2, 0) {
		t.Error("node 2 still behind once its stragglers ended")
	}
}

// A skipped node gets no call, its reply is ErrNotSent, a vote against,
// and the Tracker does not count it.
func TestRoundSkipsNodes(t *testing.T) {
	var calls [3]atomic.Int32
	var tracker Tracker
	r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Skip: []bool{false, true, false},
		Call: func(_ context.Context, node int) Reply {
			calls[node].Add(1)
			return Reply{Value: node != 0}
		}}
	replies := r.Run(context.Background())
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(replies[1].Err, ErrNotSent) {
		t.Errorf("skipped node's reply %v, want ErrNotSent", replies[1])
	}
	for node := range calls {
		if got, want := calls[node].Load(), int32(1); node == 1 && got != 0 || node != 1 && got != want {
			t.Errorf("node %d: %d calls", node, got)
		}
	}
	// Node 0 said no and node 1 was skipped: two votes against decide
	// the round whatever node 2 says.
	if yes(replies[0]) || yes(replies[1]) {
		t.Errorf("replies %v: a yes from node 0 or 1", replies)
	}
}

// Once a lane's first request was not sent, no later request of the same
// Lanes is sent on it; a skip on a lane that carried a request is ignored.
func TestLanesStayClosedAfterASkip(t *testing.T) {
	var lanes Lanes
	var tracker Tracker
	var mu sync.Mutex
	calls := map[int][]int{} // node -> rounds it served
	for round, skip := range [][]bool{{true, false, false}, nil, {false, true, false}, nil} {
		r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: &lanes, Tracker: &tracker, Skip: skip,
			Call: func(_ context.Context, node int) Reply {
				mu.Lock()
				calls[node] = append(calls[node], round)
				mu.Unlock()
				return Reply{Value: true}
			}}
		replies := r.Run(context.Background())
		if !errors.Is(replies[0].Err, ErrNotSent) {
			t.Errorf("round %d: node 0 replied %v, want ErrNotSent", round, replies[0])
		}
	}
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := calls[0]; len(got) != 0 {
		t.Errorf("node 0 served rounds %v after its first was skipped", got)
	}
	if got := calls[1]; len(got) != 4 {
		t.Errorf("node 1 served rounds %v, want all 4: its skip came after a request", got)
	}
}

// A round that the caller's context cut short leaves its requests running,
// but they are not behind anything: the nodes had no time to answer.
func TestLagIgnoresRoundsCutShortByTheCaller(t *testing.T) {
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	lag := NewLag(3)
	lag.Now = clock.Now
	var tracker Tracker
	s := newStalls(0, 1, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Lag: lag, Tracker: &tracker}
	for node, reply := range r.Run(ctx) {
		if !errors.Is(reply.Err, ErrPending) {
			t.Errorf("node %d: %v, want ErrPending", node, reply)
		}
	}
	s.started.Wait()
	clock.Advance(time.Minute)
	for node := range 3 {
		if n := lag.Stragglers(node); n != 0 || lag.Behind(node, time.Second) {
			t.Errorf("node %d: %d stragglers, behind %v after a round the caller cut short", node, n, lag.Behind(node, time.Second))
		}
	}
	close(s.release)
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
