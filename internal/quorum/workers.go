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
// An idle worker waits on the tasks channel alone, the cheapest wait
// there is: it is told to exit by what it receives there. Every workerIdle
// while workers live, a timer of the Workers offers each idle worker a
// tick, and a worker that has had no task since the previous tick exits;
// Wait offers each idle worker retireTask.
//
// The zero value is ready to use and safe for concurrent use. A Workers
// must not be copied after first use.
type Workers struct {
	once  sync.Once
	tasks chan *task // unbuffered: a send succeeds only to an idle worker

	mu     sync.Mutex
	live   map[*worker]struct{} // the workers started and not yet exited
	exited chan struct{}        // closed when a worker exits; made only for a waiter
	ticker *time.Timer          // offers the ticks while workers live; nil while none does
	ticks  uint64               // the ticks offered so far
}

// worker is one goroutine of a Workers.
type worker struct {
	// busyUntil is the monotime at which the request it runs becomes
	// overdue, 0 while it runs none.
	busyUntil atomic.Int64
}

// task is one node's request of a round, as Round.node runs it. It lives
// in its round's state, which holds one per node and what the requests of
// the round share, and is sent to a worker by pointer, so that running
// it on a worker allocates nothing. A task with a nil r is no request: a
// tick (see Workers), or retireTask.
type task struct {
	r    *Round
	node int
	tick uint64 // of a tick: its number, from 1
}

// retireTask, received by an idle worker, makes it exit (Workers.Wait).
var retireTask = new(task)

func (t *task) run() { t.r.node(t.node) }

// run runs t on an idle worker, or on a new one when none is idle. w may
// be nil: t then runs on a goroutine of its own.
func (w *Workers) run(t *task) {
	if w == nil {
		go t.run()
		return
	}
	w.once.Do(w.init)
	select {
	case w.tasks <- t:
		return
	default:
	}
	wk := new(worker)
	wk.busyUntil.Store(t.r.state.track.overdue) // busy from the start, for Wait
	w.mu.Lock()
	// Added under mu: a Wait that does not see this worker asks again
	// once it has, or learns it exited.
	if w.live == nil {
		w.live = make(map[*worker]struct{})
	}
	w.live[wk] = struct{}{}
	if w.ticker == nil {
		w.ticker = time.AfterFunc(workerIdle, w.tick)
	}
	seen := w.ticks
	w.mu.Unlock()
	go w.work(wk, t, seen)
}

func (w *Workers) init() { w.tasks = make(chan *task) }

// tick offers a new tick to every idle worker, and sets the timer for the
// next while workers live. A worker that takes a tick and takes it again,
// having gone back to wait, ignores it the second time; one that is busy
// or about to wait misses it, and takes the next.
func (w *Workers) tick() {
	w.mu.Lock()
	if len(w.live) == 0 {
		w.ticker = nil
		w.mu.Unlock()
		return
	}
	w.ticks++
	t := &task{tick: w.ticks}
	offers := len(w.live)
	w.ticker.Reset(workerIdle)
	w.mu.Unlock()
	for range offers {
		select {
		case w.tasks <- t:
		default:
			return // no worker waits
		}
	}
}

// work runs t, then the tasks sent to it, until it takes a tick with no
// task since the previous tick it took, or retireTask. seen is the last
// tick offered before it started: it exits between one and two periods
// after its last task.
func (w *Workers) work(wk *worker, t *task, seen uint64) {
	defer w.exit(wk)
	ran := false // a task since the last tick
	for {
		switch {
		case t == retireTask:
			return
		case t.r == nil:
			if t.tick > seen {
				if !ran {
					return
				}
				seen, ran = t.tick, false
			}
		default:
			wk.busyUntil.Store(t.r.state.track.overdue) // for a task from w.tasks
			t.run()
			wk.busyUntil.Store(0)
			ran = true
		}
		t = <-w.tasks
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
	w.once.Do(w.init)
	return waitFor(ctx, w.pending)
}

// retireIdle makes every worker that waits for a task exit.
func (w *Workers) retireIdle() {
	for {
		select {
		case w.tasks <- retireTask:
		default:
			return
		}
	}
}

// pending ends the idle workers, and returns a channel closed when a
// worker exits and the earliest time (monotime) at which the request of a
// busy worker becomes overdue, or a nil channel when every worker left is
// busy with an overdue request. A worker that has just finished a task
// may not yet wait for the next when pending offers retireTask: pending
// is asked again after workerIdle while one is idle.
func (w *Workers) pending(now int64) (<-chan struct{}, int64) {
	w.retireIdle()
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
		if len(w.live) == 0 && w.ticker != nil {
			w.ticker.Stop()
			w.ticker = nil
		}
		return nil, 0
	}
	if w.exited == nil {
		w.exited = make(chan struct{})
	}
	return w.exited, until
}
