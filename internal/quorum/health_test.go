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
// for more than the limit since, and stays so while its stragglers run; a
// node whose stragglers end in time never is.
func TestHealthFindsANodeBehind(t *testing.T) {
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	health := NewHealth(3)
	health.Now = clock.Now
	var tracker counter
	s := newStalls(2)
	run := func() []Reply {
		r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Health: health, Tracker: &tracker}
		return r.Run(context.Background())
	}
	if health.Behind(2, time.Second) {
		t.Fatal("a node behind before any round")
	}
	s.started.Add(1) // two rounds stall on node 2
	for range 2 {
		if replies := run(); !errors.Is(replies[2].Err, ErrPending) {
			t.Fatalf("node 2 answered %v, want ErrPending", replies[2])
		}
	}
	s.started.Wait()
	if got := health.Stragglers(2); got != 2 {
		t.Errorf("Stragglers(2) = %d, want 2", got)
	}
	if got := health.Stragglers(0); got != 0 {
		t.Errorf("Stragglers(0) = %d, want 0", got)
	}
	clock.Advance(time.Second)
	if health.Behind(2, time.Second) {
		t.Error("node 2 behind when its oldest straggler is exactly at the limit")
	}
	clock.Advance(time.Millisecond)
	if !health.Behind(2, time.Second) {
		t.Error("node 2 not behind with stragglers past the limit")
	}
	if health.Behind(0, time.Second) || health.Behind(1, time.Second) {
		t.Error("a node that answered in time is behind")
	}
	if !health.Behind(2, time.Hour) {
		t.Error("node 2 no longer behind, under a longer limit, while its stragglers run")
	}
	close(s.release)
	tracker.Wait()
	if got := health.Stragglers(2); got != 0 {
		t.Errorf("Stragglers(2) after the stalls ended = %d, want 0", got)
	}
	if health.Behind(2, 0) {
		t.Error("node 2 not given a probe once its stragglers ended")
	}
}

// A node found behind, once its stragglers have ended, gets one probe at a
// time, and another only when the last was answered late or was not sent
// (4×limit passed with no reply); it stays behind until a probe is
// answered within the limit. A round that the caller cut short says
// nothing either way.
func TestHealthProbesANodeBehind(t *testing.T) {
	const limit = time.Second
	ctx := context.Background()
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	health := NewHealth(3)
	health.Now = clock.Now
	var tracker counter
	// stalled runs a round in which node 2 answers once the clock has
	// moved on by lag since the round returned, asking Behind(2) before
	// it does when during is set, and returns what it answered.
	stalled := func(ctx context.Context, lag time.Duration, during bool) bool {
		t.Helper()
		s := newStalls(2)
		r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Health: health, Tracker: &tracker}
		if replies := r.Run(ctx); !errors.Is(replies[2].Err, ErrPending) {
			t.Fatalf("node 2 answered %v, want ErrPending", replies[2])
		}
		s.started.Wait()
		clock.Advance(lag)
		behind := during && health.Behind(2, limit)
		close(s.release)
		tracker.Wait()
		return behind
	}
	probe := func(when string) {
		t.Helper()
		if health.Behind(2, limit) {
			t.Fatalf("%s: node 2 got no probe", when)
		}
		if !health.Behind(2, limit) {
			t.Fatalf("%s: node 2 got a second probe while the first is on its way", when)
		}
	}

	if !stalled(ctx, 2*limit, true) {
		t.Fatal("node 2 not behind with a straggler past the limit")
	}
	probe("stragglers ended")
	stalled(ctx, 2*limit, false) // the probe, answered late
	probe("probe answered late")
	clock.Advance(4 * limit)
	if !health.Behind(2, limit) {
		t.Fatal("node 2 got a new probe before 4×limit passed")
	}
	clock.Advance(time.Nanosecond)
	probe("probe not sent")

	// A round that the caller cuts short, in which node 2 then answers at
	// once, does not end its being behind.
	cut, cancel := context.WithCancel(ctx)
	s := newStalls(1, 2)
	r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Health: health, Tracker: &tracker}
	go func() {
		s.started.Wait()
		cancel()
	}()
	r.Run(cut)
	close(s.release)
	tracker.Wait()
	if !health.Behind(2, limit) {
		t.Fatal("node 2 caught up by a reply to a round the caller cut short")
	}

	// A probe answered in time ends it.
	clock.Advance(4*limit + time.Nanosecond)
	probe("after the cut round")
	prompt := Round{Nodes: 3, Timeout: time.Hour, Call: newStalls().call(3), Yes: yes, Health: health, Tracker: &tracker, Wait: every3}
	prompt.Run(ctx)
	for range 2 {
		if health.Behind(2, limit) {
			t.Fatal("node 2 still behind after answering a probe in time")
		}
	}
}

// A skipped node gets no call, its reply is ErrNotSent, a vote against,
// and the Tracker does not count it.
func TestRoundSkipsNodes(t *testing.T) {
	var calls [3]atomic.Int32
	var tracker counter
	r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Skip: []bool{false, true, false},
		Call: func(_ context.Context, node int) Reply {
			calls[node].Add(1)
			return Reply{Value: node != 0}
		}}
	replies := r.Run(context.Background())
	tracker.Wait()
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
	lanes := NewLanes(new(Order))
	var tracker counter
	var mu sync.Mutex
	calls := map[int][]int{} // node -> rounds it served
	for round, skip := range [][]bool{{true, false, false}, nil, {false, true, false}, nil} {
		r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: lanes, Tracker: &tracker, Skip: skip,
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
	tracker.Wait()
	if got := calls[0]; len(got) != 0 {
		t.Errorf("node 0 served rounds %v after its first was skipped", got)
	}
	if got := calls[1]; len(got) != 4 {
		t.Errorf("node 1 served rounds %v, want all 4: its skip came after a request", got)
	}
}

// A round that the caller's context cut short leaves its requests running,
// but they are not behind anything: the nodes had no time to answer.
func TestHealthIgnoresRoundsCutShortByTheCaller(t *testing.T) {
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	health := NewHealth(3)
	health.Now = clock.Now
	var tracker counter
	s := newStalls(0, 1, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Health: health, Tracker: &tracker}
	for node, reply := range r.Run(ctx) {
		if !errors.Is(reply.Err, ErrPending) {
			t.Errorf("node %d: %v, want ErrPending", node, reply)
		}
	}
	s.started.Wait()
	clock.Advance(time.Minute)
	for node := range 3 {
		if n := health.Stragglers(node); n != 0 || health.Behind(node, time.Second) {
			t.Errorf("node %d: %d stragglers, behind %v after a round the caller cut short", node, n, health.Behind(node, time.Second))
		}
	}
	close(s.release)
	tracker.Wait()
}

// outcomes is a Round's Outcomes that counts the ends it is told of, per
// node.
type outcomes struct {
	told [3]atomic.Int32
}

func (o *outcomes) Ended(node int, _ error, _ time.Duration) { o.told[node].Add(1) }

// Outcomes is told of no request that was not sent, such as one whose
// wait for the request before it on its lane took all the time.
func TestOutcomesOfRequestsNotSent(t *testing.T) {
	var tracker counter
	var told outcomes
	lanes := NewLanes(new(Order))
	// Node 2 holds the first request of the lanes; the next ones wait
	// for it and give up at their timeout.
	s := newStalls(2)
	first := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Outcomes: &told, Tracker: &tracker, Lanes: lanes, Call: s.call(3)}
	first.Run(context.Background())
	s.started.Wait()
	for range 3 {
		r := Round{Nodes: 3, Timeout: time.Millisecond, Yes: yes, Outcomes: &told, Tracker: &tracker, Lanes: lanes, Wait: every3,
			Call: func(context.Context, int) Reply { return Reply{Value: true} }}
		if replies := r.Run(context.Background()); replies[2].Err == nil {
			t.Fatalf("node 2 answered %v behind the stalled request", replies[2])
		}
	}
	if n := told.told[2].Load(); n != 0 {
		t.Errorf("Outcomes told of %d requests to node 2, none of which was sent or ended", n)
	}
	close(s.release)
	tracker.Wait()
	if n := told.told[2].Load(); n != 1 {
		t.Errorf("Outcomes told of %d requests to node 2, want the stalled one", n)
	}
}

// A request not sent because the previous one of its lane took all the
// time passes its place on the lane on to the next request only once
// that previous one has returned: two requests of one lane never run on
// a node at once.
func TestLaneOrderSurvivesARequestNotSent(t *testing.T) {
	lanes := NewLanes(new(Order))
	var tracker counter
	var running, overlaps atomic.Int32
	s := newStalls(2)
	call := func(stall func(context.Context, int) Reply) func(context.Context, int) Reply {
		return func(ctx context.Context, node int) Reply {
			if node != 2 {
				return Reply{Value: true}
			}
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			defer running.Add(-1)
			if stall != nil {
				return stall(ctx, node)
			}
			return Reply{Value: true}
		}
	}
	// r0 stalls on node 2; r1 waits for it and gives up at its timeout;
	// r2 follows r1 and waits for every node, for at most its own,
	// longer, timeout.
	r0 := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Lanes: lanes, Call: call(s.call(3))}
	r0.Run(context.Background())
	s.started.Wait()
	r1 := Round{Nodes: 3, Timeout: time.Millisecond, Yes: yes, Tracker: &tracker, Lanes: lanes, Call: call(nil)}
	r1.Run(context.Background())
	r2 := Round{Nodes: 3, Timeout: 50 * time.Millisecond, Wait: every3, Yes: yes, Tracker: &tracker, Lanes: lanes, Call: call(nil)}
	replies := r2.Run(context.Background())
	close(s.release)
	tracker.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d requests of one lane ran on node 2 while the one before them did (r2's reply there: %v)", n, replies[2])
	}
}

// stalledLane returns Lanes whose lane on the single node holds a request
// that stalls until the returned function is called, run on a goroutine of
// its own, as another caller's extend would be.
func stalledLane(t *testing.T, tracker *counter) (*Lanes, func()) {
	t.Helper()
	lanes := NewLanes(new(Order))
	s := newStalls(0)
	first := Round{Nodes: 1, Timeout: time.Hour, Yes: yes, Tracker: tracker, Lanes: lanes, Call: s.call(1)}
	go first.Run(context.Background())
	s.started.Wait()
	return lanes, func() { close(s.release) }
}

// returnsBeforeRelease runs run while a request stalls, and reports
// whether run returned before the stall ended: the stall ends by itself
// after 10 seconds, so that a run that waits for it fails rather than
// hangs.
func returnsBeforeRelease(release func(), run func()) bool {
	timer := time.AfterFunc(10*time.Second, release)
	run()
	if timer.Stop() {
		release()
		return true
	}
	return false
}

// A single node's round whose request cannot be sent, since ctx ended
// while the previous request of its lane still runs, returns at once, the
// node not having answered: the lane's order is kept on another
// goroutine, not the caller's.
func TestSingleNodeRoundDoesNotWaitForItsLane(t *testing.T) {
	var tracker counter
	lanes, release := stalledLane(t, &tracker)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var reply Reply
	if !returnsBeforeRelease(release, func() {
		r := Round{Nodes: 1, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Lanes: lanes,
			Call: func(context.Context, int) Reply { return Reply{Value: true} }}
		reply = r.Run(ctx)[0]
	}) {
		t.Error("a single node's round whose ctx had ended returned only once the request before it on its lane did")
	}
	if !errors.Is(reply.Err, ErrPending) {
		t.Errorf("reply %v, want ErrPending", reply)
	}
	tracker.Wait()
}

// A round that waits for no node's reply returns at once, its requests
// going on in the background, a single node's too.
func TestRoundWaitingForNoNodeReturnsAtOnce(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		var tracker counter
		s := newStalls()
		for node := range nodes {
			s.nodes[node] = true
		}
		s.started.Add(nodes)
		var replies []Reply
		if !returnsBeforeRelease(func() { close(s.release) }, func() {
			r := Round{Nodes: nodes, Timeout: time.Hour, Wait: make([]bool, nodes), Tracker: &tracker, Call: s.call(nodes)}
			replies = r.Run(context.Background())
		}) {
			t.Errorf("%d nodes: a round that waits for no reply returned only once the requests did", nodes)
		}
		for node, reply := range replies {
			if !errors.Is(reply.Err, ErrPending) {
				t.Errorf("%d nodes: node %d replied %v, want ErrPending", nodes, node, reply)
			}
		}
		tracker.Wait()
	}
}

// An inline call that fails because the caller cancelled its ctx says
// nothing of the node, and Outcomes is not told of it; it is of a call on
// a goroutine of its own, detached from the cancellation.
func TestOutcomesOfCallsCancelledByTheCaller(t *testing.T) {
	for _, inline := range []bool{true, false} {
		var told outcomes
		var tracker counter
		ctx, cancel := context.WithCancel(context.Background())
		r := Round{Nodes: 1, Timeout: time.Hour, Yes: yes, Inline: inline, Outcomes: &told, Tracker: &tracker,
			Call: func(ctx context.Context, node int) Reply {
				cancel()
				return Reply{Err: ctx.Err()}
			}}
		if got := r.Run(ctx); inline && got[0].Err != ErrPending {
			t.Fatalf("inline call cancelled by the caller: %v, want ErrPending", got[0].Err)
		}
		tracker.Wait()
		want := int32(1) // the node's own answer
		if inline {
			want = 0
		}
		if got := told.told[0].Load(); got != want {
			t.Errorf("inline %v: Outcomes told of %d calls cancelled by the caller, want %d", inline, got, want)
		}
	}
}
