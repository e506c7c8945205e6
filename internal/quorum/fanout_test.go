package quorum

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestFanOutCallsEveryNodeOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 9} {
		calls := make([]int32, n)
		FanOut(context.Background(), n, time.Minute, func(ctx context.Context, node int) {
			atomic.AddInt32(&calls[node], 1)
		})
		for node, c := range calls {
			if c != 1 {
				t.Errorf("n=%d: node %d called %d times, want 1", n, node, c)
			}
		}
	}
}

func TestFanOutRunsNodesConcurrently(t *testing.T) {
	// Every node waits until all have started: this only returns if the
	// calls overlap in time.
	const n = 5
	started := newLatch(n)
	FanOut(context.Background(), n, time.Minute, func(ctx context.Context, node int) {
		started.done()
		started.wait()
	})
}

func TestFanOutNodeContextEndsAtTimeout(t *testing.T) {
	errs := make([]error, 3)
	FanOut(context.Background(), 3, time.Millisecond, func(ctx context.Context, node int) {
		if node == 1 {
			<-ctx.Done()
		}
		errs[node] = ctx.Err()
	})
	if !errors.Is(errs[1], context.DeadlineExceeded) {
		t.Errorf("slow node's ctx.Err() = %v, want %v", errs[1], context.DeadlineExceeded)
	}
}

func TestFanOutNodeContextEndsWithParent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errs := make([]error, 2)
	FanOut(ctx, 2, time.Hour, func(ctx context.Context, node int) {
		if node == 0 {
			cancel()
		}
		<-ctx.Done()
		errs[node] = ctx.Err()
	})
	for node, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("node %d ctx.Err() = %v, want %v", node, err, context.Canceled)
		}
	}
}

// latch is a countdown latch: wait returns once done was called n times.
type latch struct {
	ch   chan struct{}
	left atomic.Int32
}

func newLatch(n int32) *latch {
	l := &latch{ch: make(chan struct{})}
	l.left.Store(n)
	return l
}

func (l *latch) done() {
	if l.left.Add(-1) == 0 {
		close(l.ch)
	}
}

func (l *latch) wait() { <-l.ch }
