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
		workers.running.mu.Lock()
		running := workers.running.running
		workers.running.mu.Unlock()
		if running != 0 {
			t.Fatalf("pass %d: %d workers running after Wait, want 0", pass, running)
		}
		goleak.VerifyNone(t)
	}
}
