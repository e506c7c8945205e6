package quorum

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestDecided(t *testing.T) {
	for _, tc := range []struct {
		n, yes, no int
		want       bool
	}{
		{1, 0, 0, false},
		{1, 1, 0, true},
		{1, 0, 1, true},
		{3, 1, 0, false},
		{3, 2, 0, true},
		{3, 1, 1, false},
		{3, 0, 2, true},
		{4, 2, 1, false},
		{4, 3, 0, true},
		{4, 1, 2, true}, // 2 left cannot make 3
		{5, 2, 2, false},
		{5, 3, 2, true},
		{5, 2, 3, true},
	} {
		if got := Decided(tc.n, tc.yes, tc.no); got != tc.want {
			t.Errorf("Decided(%d, %d, %d) = %v, want %v", tc.n, tc.yes, tc.no, got, tc.want)
		}
	}
}

// stalls is a set of nodes whose calls block until release is closed, or
// their context ends.
type stalls struct {
	release chan struct{}
	nodes   map[int]bool
	started sync.WaitGroup // the stalled calls that have started
}

func newStalls(nodes ...int) *stalls {
	s := &stalls{release: make(chan struct{}), nodes: map[int]bool{}}
	for _, n := range nodes {
		s.nodes[n] = true
	}
	s.started.Add(len(nodes))
	return s
}

// call answers yes for every node below yesBelow, and no otherwise,
// after the stall of a stalled node.
func (s *stalls) call(yesBelow int) func(context.Context, int) Reply {
	return func(ctx context.Context, node int) Reply {
		if s.nodes[node] {
			s.started.Done()
			select {
			case <-s.release:
			case <-ctx.Done():
				return Reply{Err: ctx.Err()}
			}
		}
		return Reply{Value: node < yesBelow}
	}
}

func yes(r Reply) bool { return r.Err == nil && r.Value == true }

// counter is a Round's Tracker that tells how many requests run.
type counter struct {
	sync.WaitGroup
	n atomic.Int32
}

func (c *counter) Add(n int) { c.n.Add(int32(n)); c.WaitGroup.Add(n) }
func (c *counter) Done()     { c.n.Add(-1); c.WaitGroup.Done() }

// every3 makes a round of three nodes wait for every reply.
var every3 = []bool{true, true, true}

func TestRoundReturnsOnceDecided(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yesBelow int // nodes below it answer yes
		stalled  []int
		yes      int
	}{
		{"granted without the stalled nodes", 3, []int{3, 4}, 3},
		{"refused without the stalled nodes", 0, []int{3, 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStalls(tc.stalled...)
			var tracker counter
			r := Round{Nodes: 5, Timeout: time.Hour, Call: s.call(tc.yesBelow), Yes: yes, Tracker: &tracker}
			replies := r.Run(context.Background())
			s.started.Wait()
			got := 0
			for node, reply := range replies {
				if yes(reply) {
					got++
				}
				if stalled := s.nodes[node]; stalled != errors.Is(reply.Err, ErrPending) {
					t.Errorf("node %d: reply %v, stalled %v", node, reply, stalled)
				}
			}
			if got != tc.yes {
				t.Errorf("%d yes replies, want %d", got, tc.yes)
			}
			if got := tracker.n.Load(); got != int32(len(tc.stalled)) {
				t.Errorf("Tracker counts %d requests while the stalled calls run, want %d", got, len(tc.stalled))
			}
			close(s.release)
			tracker.Wait()
		})
	}
}

// A round waits for the stalled node 2 when asked: for every reply, for
// node 2's, or for every reply of a round that counts no votes. A round
// waiting for node 0 also waits for the votes to decide it.
func TestRoundWaitsWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yesBelow int // nodes below it answer yes
		set      func(*Round)
	}{
		{"every", 3, func(r *Round) { r.Wait = every3 }},
		{"wait for node 2", 3, func(r *Round) { r.Wait = []bool{false, false, true} }},
		{"wait for node 0, votes undecided", 1, func(r *Round) { r.Wait = []bool{true, false, false} }},
		{"no votes counted", 3, func(r *Round) { r.Yes = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Node 2 answers a second after it was called, or when Run
			// has returned without it, whichever comes first.
			s := newStalls(2)
			var once sync.Once
			release := func() { once.Do(func() { close(s.release) }) }
			go func() {
				s.started.Wait()
				time.AfterFunc(time.Second, release)
			}()
			r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(tc.yesBelow), Yes: yes}
			tc.set(&r)
			replies := r.Run(context.Background())
			release()
			if want := (Reply{Value: tc.yesBelow > 2}); replies[2] != want {
				t.Errorf("stalled node's reply %v, want %v", replies[2], want)
			}
		})
	}
}

func TestRoundEndsAtTimeoutOrWithCtx(t *testing.T) {
	// The calls ignore their context: only the round's own timer or ctx
	// can end it.
	ignore := make(chan struct{})
	defer close(ignore)
	stuck := func(context.Context, int) Reply {
		<-ignore
		return Reply{Value: true}
	}
	t.Run("timeout", func(t *testing.T) {
		for _, n := range []int{1, 3} {
			r := Round{Nodes: n, Timeout: time.Millisecond, Call: stuck, Yes: yes}
			for node, reply := range r.Run(context.Background()) {
				if !errors.Is(reply.Err, ErrPending) {
					t.Errorf("%d nodes: node %d: %v, want ErrPending", n, node, reply)
				}
			}
		}
	})
	t.Run("ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := Round{Nodes: 3, Timeout: time.Hour, Call: stuck, Yes: yes}
		for node, reply := range r.Run(ctx) {
			if !errors.Is(reply.Err, ErrPending) {
				t.Errorf("node %d: %v, want ErrPending", node, reply)
			}
		}
	})
}

// The calls of a round outlive the caller's cancellation: a deferred
// cancel after the round must not cut short the requests still on their
// way. The inline call of a single node keeps it.
func TestRoundCallsAreDetachedFromCancellation(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		inline   bool
		detached bool
	}{{1, true, false}, {1, false, true}, {3, true, true}} {
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		r := Round{Nodes: tc.nodes, Timeout: time.Hour, Yes: yes, Inline: tc.inline, Call: func(ctx context.Context, node int) Reply {
			if node == 0 {
				cancel()
				select {
				case <-ctx.Done():
					errs <- ctx.Err()
				default:
					errs <- nil
				}
			}
			return Reply{Value: true}
		}}
		var tracker counter
		r.Tracker = &tracker
		r.Run(ctx)
		tracker.Wait()
		cancel()
		if err := <-errs; (err == nil) != tc.detached {
			t.Errorf("%d nodes, inline %v: node 0's ctx after the caller's cancel: %v, want detached %v", tc.nodes, tc.inline, err, tc.detached)
		}
	}
}

// Only a round of one node that waits for its reply, with no earlier
// request of its lane still running, runs its call inline: on the calling
// goroutine, which the Tracker then never counts.
func TestRoundRunsInlineOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(*Round)
		inline bool
	}{
		{"one node, inline", func(r *Round) {}, true},
		{"not inline", func(r *Round) { r.Inline = false }, false},
		{"three nodes", func(r *Round) { r.Nodes = 3 }, false},
		{"reply not waited for", func(r *Round) { r.Yes, r.Wait = nil, []bool{false} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tracker counter
			counted := make(chan bool, 3)
			r := Round{Nodes: 1, Timeout: time.Hour, Yes: yes, Inline: true, Tracker: &tracker,
				Call: func(ctx context.Context, node int) Reply {
					counted <- tracker.n.Load() > 0
					return Reply{Value: true}
				}}
			tc.set(&r)
			r.Run(context.Background())
			tracker.Wait()
			if got := <-counted; got == tc.inline {
				t.Errorf("call counted by the Tracker %v, want %v", got, !tc.inline)
			}
		})
	}
}

// An inline call ends at the Timeout when its client honours ctx, as the
// caller of Inline promises: a stalled node holds its round no longer.
func TestInlineRoundEndsAtTimeout(t *testing.T) {
	s := newStalls(0)
	defer close(s.release)
	r := Round{Nodes: 1, Timeout: time.Millisecond, Yes: yes, Inline: true, Call: s.call(1)}
	if got := r.Run(context.Background()); !errors.Is(got[0].Err, context.DeadlineExceeded) {
		t.Errorf("stalled inline call: %v, want context.DeadlineExceeded", got[0].Err)
	}
}

// Requests with the same Lanes reach each node in the order their rounds
// were run, even when a round returned before the node answered it.
func TestLanesOrderRequestsPerNode(t *testing.T) {
	lanes := NewLanes(new(Order))
	var tracker counter
	var mu sync.Mutex
	var order []int // the rounds node 2 served, in order
	s := newStalls(2)
	for round := range 3 {
		r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: lanes, Tracker: &tracker,
			Call: func(ctx context.Context, node int) Reply {
				if node == 2 {
					if round == 0 {
						s.started.Done()
						<-s.release
					}
					mu.Lock()
					order = append(order, round)
					mu.Unlock()
				}
				return Reply{Value: true}
			}}
		replies := r.Run(context.Background())
		if !errors.Is(replies[2].Err, ErrPending) {
			t.Fatalf("round %d: node 2 answered %v while the first round's request stalled", round, replies[2])
		}
	}
	s.started.Wait()
	close(s.release)
	tracker.Wait()
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Errorf("node 2 served rounds %v, want [0 1 2]", order)
	}
}

// The first request of each Lanes of an Order on a node is sent once the
// requests of the other Lanes entered there before it have returned: their
// first requests and later ones, also when one of the Lanes skipped the
// node; later requests of a Lanes follow only its own.
func TestOrder(t *testing.T) {
	var tracker counter
	var mu sync.Mutex
	var served []string // the requests node 2 served, in order
	gates := map[string]chan struct{}{}
	gate := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[name] == nil {
			gates[name] = make(chan struct{})
		}
		return gates[name]
	}
	stalled := map[string]bool{"a2": true, "b1": true}
	started := make(chan string, 10)
	run := func(l *Lanes, name string, skip []bool) {
		r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: l, Tracker: &tracker, Skip: skip,
			Call: func(ctx context.Context, node int) Reply {
				if node == 2 {
					if stalled[name] {
						started <- name
						<-gate(name)
					}
					mu.Lock()
					served = append(served, name)
					mu.Unlock()
				}
				return Reply{Value: true}
			}}
		r.Run(context.Background())
	}
	var order Order
	a, b, c, d := NewLanes(&order), NewLanes(&order), NewLanes(&order), NewLanes(&order)
	run(a, "a1", nil) // a's first request, served at once
	tracker.Wait()
	run(a, "a2", nil) // a's second request stalls on node 2
	if got := <-started; got != "a2" {
		t.Fatalf("%s started, want a2", got)
	}
	run(b, "b1", nil)                        // follows a2; stalls once sent
	run(c, "c1", []bool{false, false, true}) // skips node 2
	run(d, "d1", nil)                        // follows a2 and b1
	run(a, "a3", nil)                        // follows a2 only
	close(gate("a2"))
	if got := <-started; got != "b1" {
		t.Fatalf("%s started, want b1", got)
	}
	close(gate("b1"))
	tracker.Wait()
	// a3 may be served before or after b1: it follows only a2.
	mu.Lock()
	defer mu.Unlock()
	pos := map[string]int{}
	for i, name := range served {
		pos[name] = i
	}
	if len(served) != 5 || pos["a1"] != 0 || pos["a2"] != 1 || pos["b1"] > pos["d1"] || pos["a3"] < pos["a2"] {
		t.Errorf("node 2 served %v, want a1, a2, then b1 before d1, and a3 after a2", served)
	}
	if _, ok := pos["c1"]; ok {
		t.Error("node 2 served c1, which skipped it")
	}
}

// Lanes of distinct Orders, those of distinct resources, follow only
// their own requests.
func TestLanesOfDistinctOrders(t *testing.T) {
	var tracker counter
	s := newStalls(2)
	a, b := NewLanes(new(Order)), NewLanes(new(Order))
	r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: a, Tracker: &tracker, Call: s.call(3)}
	r.Run(context.Background())
	s.started.Wait()
	served := make(chan int, 3)
	r2 := Round{Nodes: 3, Timeout: time.Hour, Wait: every3, Yes: yes, Lanes: b, Tracker: &tracker,
		Call: func(ctx context.Context, node int) Reply { served <- node; return Reply{Value: true} }}
	replies := r2.Run(context.Background())
	if replies[2].Err != nil {
		t.Errorf("b's request on node 2 waited for a's: %v", replies[2].Err)
	}
	close(s.release)
	tracker.Wait()
}

// However many first requests queue on a node, each is handed a handful
// of channels to wait for, not every request before it.
func TestOrderWaitsForAFewChannels(t *testing.T) {
	const k = 2000
	var order Order
	held := NewLanes(&order)
	total := 0
	for i := range k {
		l := NewLanes(&order)
		prev, more, _, sent := l.enter(1, 0, false)
		if !sent {
			t.Fatal("not sent")
		}
		if i > 0 && prev == nil {
			t.Fatalf("first request %d follows nothing, while all before it run", i)
		}
		total += len(more)
		if i%10 == 0 {
			held.enter(1, 0, false) // a held lock's extends in between
		}
	}
	if total > k {
		t.Errorf("%d first requests were handed %d more channels to wait for, want at most %d", k, total, k)
	}
}

// A first request that was not sent, its wait for the requests it follows
// having outlasted the round, answers ErrPending and closes its lane: the
// node never got what the lane's later requests would follow.
func TestOrderNotSentFirstRequestClosesItsLane(t *testing.T) {
	var tracker counter
	var order Order
	a, b := NewLanes(&order), NewLanes(&order)
	s := newStalls(0)
	ra := Round{Nodes: 1, Timeout: time.Hour, Lanes: a, Tracker: &tracker, Wait: []bool{false}, Call: s.call(1)}
	ra.Run(context.Background()) // counts no votes and waits for no reply: returns at once
	s.started.Wait()
	rb := Round{Nodes: 1, Timeout: time.Millisecond, Yes: yes, Lanes: b, Tracker: &tracker,
		Call: func(context.Context, int) Reply { return Reply{Value: true} }}
	if got := rb.Run(context.Background()); !errors.Is(got[0].Err, ErrPending) {
		t.Errorf("b's first request, not sent: %v, want ErrPending", got[0].Err)
	}
	rb2 := Round{Nodes: 1, Timeout: time.Hour, Yes: yes, Lanes: b, Tracker: &tracker,
		Call: func(context.Context, int) Reply { return Reply{Value: true} }}
	if got := rb2.Run(context.Background()); !errors.Is(got[0].Err, ErrNotSent) {
		t.Errorf("b's next request on the lane: %v, want ErrNotSent", got[0].Err)
	}
	close(s.release)
	tracker.Wait()
}
