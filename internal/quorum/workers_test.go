package quorum

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// A worker busy with a stalled request gets no other: the rounds after
// the stalled one get every reply although they wait for every node.
func TestWorkersNeverQueueBehindAStalledRequest(t *testing.T) {
	var workers Workers
	var tracker Tracker
	s := newStalls(2)
	first := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Tracker: &tracker, Workers: &workers}
	if replies := first.Run(context.Background()); !errors.Is(replies[2].Err, ErrPending) {
		t.Fatalf("stalled node's reply %v, want ErrPending", replies[2])
	}
	s.started.Wait()
	for round := range 20 {
		r := Round{Nodes: 3, Timeout: time.Hour, Every: true, Yes: yes, Tracker: &tracker, Workers: &workers,
			Call: func(context.Context, int) Reply { return Reply{Value: true} }}
		for node, reply := range r.Run(context.Background()) {
			if !yes(reply) {
				t.Fatalf("round %d, node %d: %v, want a yes", round, node, reply)
			}
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := workers.Wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Workers.Wait with a cancelled ctx while a request stalls = %v, want context.Canceled", err)
	}
	close(s.release)
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := workers.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Wait ends the idle workers at once, whatever their idle timeout, and
// they can be started again afterwards.
func TestWorkersWaitEndsIdleWorkers(t *testing.T) {
	var workers Workers
	var tracker Tracker
	for pass := range 2 {
		for range 5 {
			r := Round{Nodes: 5, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Workers: &workers,
				Call: func(context.Context, int) Reply { return Reply{Value: true} }}
			r.Run(context.Background())
		}
		if err := tracker.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := workers.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		workers.mu.Lock()
		running := len(workers.live)
		workers.mu.Unlock()
		if running != 0 {
			t.Fatalf("pass %d: %d workers running after Wait, want 0", pass, running)
		}
		goleak.VerifyNone(t)
	}
}

// A request whose call does not end at its deadline (an adapter whose
// client ignores its context) is overdue once overdueTimeouts Timeouts
// have passed since its round started: the Tracker and the Workers stop
// waiting for it and for the worker that runs it, which is its adapter's
// to wait for. The worker exits once the call returns.
func TestWaitLeavesOverdueRequestsToTheirAdapter(t *testing.T) {
	var workers Workers
	var tracker Tracker
	release := make(chan struct{})
	entered := make(chan struct{})
	r := Round{Nodes: 3, Timeout: 10 * time.Millisecond, Yes: yes, Tracker: &tracker, Workers: &workers,
		Call: func(ctx context.Context, node int) Reply {
			if node == 2 {
				close(entered)
				<-release // ignores ctx
			}
			return Reply{Value: true}
		}}
	if replies := r.Run(context.Background()); !yes(replies[0]) || !yes(replies[1]) {
		t.Fatalf("replies %v, want yes from nodes 0 and 1", replies)
	}
	<-entered
	// A bound far above the overdue time, past which a Wait is taken to
	// hang.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tracker.Wait(ctx); err != nil {
		t.Errorf("Tracker.Wait while an overdue request runs = %v, want nil", err)
	}
	if err := workers.Wait(ctx); err != nil {
		t.Errorf("Workers.Wait while a worker runs an overdue request = %v, want nil", err)
	}
	select {
	case <-release:
		t.Fatal("the call returned before it was released")
	default:
	}
	close(release)
	if err := tracker.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := workers.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t) // the worker of the overdue request has exited
}

// A request that is not overdue is waited for, however long it takes.
func TestWaitWaitsForRequestsNotOverdue(t *testing.T) {
	var workers Workers
	var tracker Tracker
	s := newStalls(2)
	r := Round{Nodes: 3, Timeout: time.Hour, Call: s.call(3), Yes: yes, Tracker: &tracker, Workers: &workers}
	r.Run(context.Background())
	s.started.Wait()
	for name, wait := range map[string]func(context.Context) error{"Tracker": tracker.Wait, "Workers": workers.Wait} {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if err := wait(cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("%s.Wait with a cancelled ctx while a request runs = %v, want context.Canceled", name, err)
		}
	}
	close(s.release)
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := workers.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A worker that Wait sees idle may take a task before it exits, and marks
// itself busy only once it has it: while one is idle, Wait looks again
// after workerIdle at the latest, so that it does not sleep past that
// task's becoming overdue.
func TestWaitLooksAgainWhileAWorkerIsIdle(t *testing.T) {
	var workers Workers
	workers.live = map[*worker]struct{}{new(worker): {}}
	now := monotime()
	changed, until := workers.pending(now)
	if changed == nil {
		t.Fatal("pending with an idle worker = nil channel, want one to wait on")
	}
	if until > now+int64(workerIdle) {
		t.Errorf("pending with an idle worker looks again after %v, want at most %v", time.Duration(until-now), workerIdle)
	}
}

// Without Wait, idle workers exit on their own once a tick of the Workers
// finds them with no task since the one before, and the ticks stop with
// the last of them.
func TestIdleWorkersExitOnTheirOwn(t *testing.T) {
	var workers Workers
	var tracker Tracker
	r := Round{Nodes: 5, Timeout: time.Hour, Yes: yes, Tracker: &tracker, Workers: &workers,
		Call: func(context.Context, int) Reply { return Reply{Value: true} }}
	r.Run(context.Background())
	if err := tracker.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		workers.mu.Lock()
		live, ticking := len(workers.live), workers.ticker != nil
		workers.mu.Unlock()
		if live == 0 && !ticking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers live, ticks running %v, 10 s after their last task", live, ticking)
		}
	}
	goleak.VerifyNone(t)
}
