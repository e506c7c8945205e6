package faultproxy

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A Line holds chunks for their delay: it wakes the goroutines that wait on
// it when their due time, read from the monotonic clock, has passed. It
// exists because timers cannot do that below a millisecond on the
// benchmark host (see spinWindow), and one Line serves every proxy and
// connection so that at most one goroutine spins, whatever the number of
// nodes.
//
// A Line owns one goroutine, which blocks while nothing waits, sleeps while
// the earliest waiter is more than about 2 ms off, and spins otherwise,
// calling runtime.Gosched between looks at the clock so that the process's
// other goroutines still run; [Line.Close] ends it. While it spins it keeps
// one core busy: [Line.Spun] says for how long. Measured on the loaded
// 2-core host with a PING to 5 nodes at once through 250µs proxies, the
// alternatives were slower: a loop that does not yield (0.6 ms more per
// round), the Line writing the chunks itself instead of waking each
// connection's writer (0.4 ms more: the writes queue up behind each other),
// and sleeping on a locked thread with 1 ns timer slack instead of spinning
// (about 0.15 ms more each way already on one node).
//
// Its methods are safe for concurrent use.
type Line struct {
	start time.Time // the zero of due times, with its monotonic reading

	mu    sync.Mutex
	sched schedule

	kick    chan struct{} // a waiter became the earliest
	done    chan struct{} // closed by Close
	stopped chan struct{} // closed when the goroutine has ended
	close   sync.Once

	spun atomic.Int64 // time.Duration spent spinning
}

// NewLine starts a Line. Close it when every proxy using it is closed.
func NewLine() *Line {
	l := &Line{
		start:   time.Now(),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go l.run()
	return l
}

// Close ends the Line's goroutine and waits for it. Goroutines still
// waiting on the Line are released at once. It may be called more than
// once.
func (l *Line) Close() {
	l.close.Do(func() { close(l.done) })
	<-l.stopped
}

// Spun returns how long the Line's goroutine has spent spinning since it
// started: wall time in which it was always runnable, so at most one core's
// worth of CPU time, the price of its precision.
func (l *Line) Spun() time.Duration { return time.Duration(l.spun.Load()) }

// now returns the time since the Line started, on the monotonic clock.
func (l *Line) now() time.Duration { return time.Since(l.start) }

// waitUntil returns once due (a time from l.now) has passed, or the Line
// is closed. ready must have room for one value and be used by one waiting
// goroutine at a time; it may be reused for the next wait.
func (l *Line) waitUntil(due time.Duration, ready chan struct{}) {
	if due <= l.now() {
		return
	}
	l.mu.Lock()
	earliest := l.sched.add(due, ready)
	l.mu.Unlock()
	if earliest {
		select {
		case l.kick <- struct{}{}:
		default: // a kick is already pending
		}
	}
	select {
	case <-ready:
	case <-l.done:
	}
}

func (l *Line) run() {
	defer close(l.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	spinningSince := time.Duration(-1)
	for {
		l.mu.Lock()
		now := l.now()
		for {
			w, ok := l.sched.popDue(now)
			if !ok {
				break
			}
			w.ready <- struct{}{} // never blocks: see waitUntil
		}
		act, d := l.sched.next(now)
		l.mu.Unlock()

		if act == spin {
			select {
			case <-l.done:
				return
			default:
			}
			if spinningSince < 0 {
				spinningSince = now
			}
			runtime.Gosched()
			continue
		}
		if spinningSince >= 0 {
			l.spun.Add(int64(now - spinningSince))
			spinningSince = -1
		}
		if act == sleep {
			timer.Reset(d)
		}
		select {
		case <-l.kick:
		case <-timer.C:
		case <-l.done:
			return
		}
		timer.Stop()
	}
}
