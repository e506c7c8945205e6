package quorum

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

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
			var tracker Tracker
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
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := tracker.Wait(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("Tracker.Wait while the stalled calls run = %v, want context.Canceled", err)
			}
			close(s.release)
			if err := tracker.Wait(context.Background()); err != nil {
				t.Errorf("Tracker.Wait: %v", err)
			}
		})
	}
}

func TestRoundWaitsWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Round)
	}{
		{"every", func(r *Round) { r.Every = true }},
		{"wait for node 2", func(r *Round) { r.Wait = []bool{false, false, true} }},
		{"no votes counted", func(r *Round) { r.Yes = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStalls(2)
			r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes}
			tc.set(&r)
			done := make(chan []Reply, 1)
			go func() { done <- r.Run(context.Background()) }()
			s.started.Wait()
			select {
			case replies := <-done:
				t.Fatalf("Run returned %v before the stalled node answered", replies)
			default:
			}
			close(s.release)
			replies := <-done
			if !yes(replies[2]) {
				t.Errorf("stalled node's reply %v, want its yes", replies[2])
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
		r := Round{Nodes: 3, Timeout: time.Millisecond, Call: stuck, Yes: yes}
		for node, reply := range r.Run(context.Background()) {
			if !errors.Is(reply.Err, ErrPending) {
				t.Errorf("node %d: %v, want ErrPending", node, reply)
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

// The calls of a round with several nodes outlive the caller's
// cancellation: a deferred cancel after the round must not cut short the
// requests still on their way. A single node's call keeps it.
func TestRoundCallsAreDetachedFromCancellation(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		detached bool
	}{{1, false}, {3, true}} {
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		r := Round{Nodes: tc.nodes, Timeout: time.Hour, Yes: yes, Call: func(ctx context.Context, node int) Reply {
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
		var tracker Tracker
		r.Tracker = &tracker
		r.Run(ctx)
		if err := tracker.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-errs; (err == nil) != tc.detached {
			t.Errorf("%d nodes: node 0's ctx after the caller's cancel: %v, want detached %v", tc.nodes, err, tc.detached)
		}
	}
}

// Requests with the same Lanes reach each node in the order their rounds
// were run, even when a round returned before the node answered it.
func TestLanesOrderRequestsPerNode(t *testing.T) {
	var lanes Lanes
	var tracker Tracker
	var mu sync.Mutex
	var order []int // the rounds node 2 served, in order
	s := newStalls(2)
	for round := range 3 {
		r := Round{Nodes: 3, Timeout: time.Hour, Yes: yes, Lanes: &lanes, Tracker: &tracker,
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
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Errorf("node 2 served rounds %v, want [0 1 2]", order)
	}
}
