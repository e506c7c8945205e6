package quorum

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a worker waits for its next request before it
// exits. Rounds that follow each other closer than that reuse workers; a
// program that takes a lock now and then starts a goroutine per request,
// as it would without workers.
const workerIdle = 50 * time.Millisecond

// Workers keeps the goroutines that ran the requests of rounds, so that
// later rounds run their requests on them instead of starting a goroutine
// per node and request. A goroutine that runs a client call grows its
// stack to the depth of that client; a worker keeps its grown stack from
// one request to the next. A worker that has had no request for
// workerIdle, or at most twice that, exits.
//
// A request goes only to a worker that is idle at that moment, waiting for
// one, and otherwise to a new worker: a request never waits behind
// another, so a stalled node's request delays no other. A worker whose
// request overruns its deadline (see Tracker) is left to that request's
// adapter, which counts it; it exits once the request returns.
//
// The zero value is ready to use and safe for concurrent use. A Workers
// must not be copied after first use.
type Workers struct {
	once  sync.Once
	tasks chan task // unbuffered: a send succeeds only to an idle worker

	mu     sync.Mutex
	live   map[*worker]struct{} // the workers started and not yet exited
	retire chan struct{}        // closed by Wait to end the idle workers; nil until needed
	exited chan struct{}        // closed when a worker exits; made only for a waiter
}

// worker is one goroutine of a Workers.
type worker struct {
	// busyUntil is the monotime at which the request it runs becomes
	// overdue, 0 while it runs none.
	busyUntil atomic.Int64
}

// task is one node's request of a round, as Round.node runs it. It is sent
// to a worker by value.
type task struct {
	r      *Round
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	s      *roundState
	node   int
	ln     order
}

// ok reports whether t is a task, not the zero value.
func (t *task) ok() bool { return t.r != nil }

func (t *task) run() { t.r.node(t.parent, t.ctx, t.cancel, t.s, t.node, t.ln) }

// run runs t on an idle worker, or on a new one when none is idle. w may
// be nil: t then runs on a goroutine of its own.
func (w *Workers) run(t task) {
	if w == nil {
		go t.run()
		return
	}
	w.once.Do(func() { w.tasks = make(chan task) })
	select {
	case w.tasks <- t:
		return
	default:
	}
	wk := new(worker)
	wk.busyUntil.Store(t.s.track.overdue) // busy from the start, for Wait
	w.mu.Lock()
	// Added under mu: a Wait that sees this worker has closed the retire
	// channel it gets, or has not yet and closes it next.
	if w.live == nil {
		w.live = make(map[*worker]struct{})
	}
	w.live[wk] = struct{}{}
	if w.retire == nil {
		w.retire = make(chan struct{})
	}
	retire := w.retire
	w.mu.Unlock()
	go w.work(wk, t, retire)
}

// work runs t, then the tasks sent to it, until it has had none for
// workerIdle or retire is closed. Its timer is not reset for each task: it
// fires every workerIdle, and the worker exits when no task came in the
// period that ended, so it exits between one and two periods after its
// last task.
func (w *Workers) work(wk *worker, t task, retire <-chan struct{}) {
	defer w.exit(wk)
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		wk.busyUntil.Store(t.s.track.overdue) // for a task from w.tasks
		t.run()
		wk.busyUntil.Store(0)
		t = task{}  // drop the references of the finished request
		ran := true // a task in the current period
		for !t.ok() {
			select {
			case t = <-w.tasks:
			case <-idle.C:
				if !ran {
					return
				}
				ran = false
				idle.Reset(workerIdle)
			case <-retire:
				return
			}
		}
	}
}

// exit removes wk, which is exiting, and tells a waiting Wait.
func (w *Workers) exit(wk *worker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.live, wk)
	if w.exited != nil {
		close(w.exited)
		w.exited = nil
	}
}

// Wait ends the idle workers and returns nil once no worker is left but
// those whose request is overdue (see Tracker), or ctx.Err() when ctx ends
// first. A worker still running a request exits once the request returns.
// Wait is meant to be called once the requests have ended (Tracker.Wait):
// a round run while Wait waits may start a new worker, which Wait then
// waits for as well.
func (w *Workers) Wait(ctx context.Context) error {
	w.mu.Lock()
	if w.retire != nil {
		close(w.retire)
		w.retire = nil // the next worker gets a fresh one
	}
	w.mu.Unlock()
	return waitFor(ctx, w.pending)
}

// pending returns a channel closed when a worker exits, and the earliest
// time (monotime) at which the request of a busy worker becomes overdue,
// or a nil channel when every worker left is busy with an overdue request.
// An idle worker has been told to exit, but may take a task first, which
// it marks only once it has it: pending is asked again after workerIdle
// while one is idle.
func (w *Workers) pending(now int64) (<-chan struct{}, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	waiting := false
	until := now + int64(time.Hour)
	for wk := range w.live {
		switch busy := wk.busyUntil.Load(); {
		case busy == 0:
			waiting = true
			until = min(until, now+int64(workerIdle))
		case busy > now:
			waiting = true
			until = min(until, busy)
		}
	}
	if !waiting {
		return nil, 0
	}
	if w.exited == nil {
		w.exited = make(chan struct{})
	}
	return w.exited, until
}
