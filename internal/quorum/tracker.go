package quorum

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Tracker counts the requests of rounds that are still running, including
// those that go on after their round returned. The zero value is ready to
// use and safe for concurrent use.
//
// A request is waited for until it returns or becomes overdue:
// overdueTimeouts Timeouts after its round started, at least one Timeout
// after its context's deadline, its adapter has had time to end it. A
// request still running then is one whose adapter does not end it at its
// deadline (a client that ignores its context), and it is left to the
// adapter, which counts it (driver.Waiter).
type Tracker struct {
	mu     sync.Mutex
	rounds *tracked // the rounds with requests not yet returned, a doubly linked list
	// changed is closed when a round's last request returns. It is made
	// only for a waiter, and is nil while no one waits.
	changed chan struct{}
}

// overdueTimeouts is how many Timeouts after its round started a request
// stops being waited for (see Tracker): its context's deadline is at most
// two Timeouts after that (a request that waited for the one before it
// gets a whole Timeout of its own, see Round.node), and a third is left
// for its adapter to return after the deadline.
const overdueTimeouts = 3

// tracked is a round's entry in its Tracker.
type tracked struct {
	prev, next *tracked     // under the Tracker's mu
	running    atomic.Int32 // the round's requests not yet returned
	overdue    int64        // monotime at which they become overdue, set before add
}

// add counts n requests of the round of e.
func (t *Tracker) add(e *tracked, n int) {
	if n == 0 {
		return
	}
	e.running.Store(int32(n))
	t.mu.Lock()
	defer t.mu.Unlock()
	e.next = t.rounds
	if t.rounds != nil {
		t.rounds.prev = e
	}
	t.rounds = e
}

// done ends one request of the round of e; a nil t counts nothing. Only
// the round's last request takes the Tracker's lock.
func (t *Tracker) done(e *tracked) {
	if t == nil || e.running.Add(-1) > 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.rounds = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Wait returns nil once every request counted by t has returned or is
// overdue, or ctx.Err() when ctx ends first. Requests of rounds run while
// it waits are waited for as well.
func (t *Tracker) Wait(ctx context.Context) error {
	return waitFor(ctx, t.pending)
}

// pending returns a channel closed when a round's last request returns,
// and the earliest time (monotime) at which a round's requests not yet
// returned become overdue, or a nil channel when none is left that is not
// overdue at now.
func (t *Tracker) pending(now int64) (<-chan struct{}, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var until int64
	for e := t.rounds; e != nil; e = e.next {
		if e.overdue > now && (until == 0 || e.overdue < until) {
			until = e.overdue
		}
	}
	if until == 0 {
		return nil, 0
	}
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed, until
}

// waitFor returns nil once pending reports nothing left to wait for, or
// ctx.Err() when ctx ends first. pending is given the time (monotime) and
// returns a nil channel when nothing is left, or a channel that closes
// when what it counts has changed and the time until which that may take
// at the latest, after which it is asked again.
func waitFor(ctx context.Context, pending func(now int64) (<-chan struct{}, int64)) error {
	for {
		now := monotime()
		changed, until := pending(now)
		if changed == nil {
			return nil
		}
		timer := time.NewTimer(time.Duration(until - now))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
}

// epoch is the origin of monotime.
var epoch = time.Now()

// monotime returns the monotonic clock's reading, in nanoseconds since
// epoch.
func monotime() int64 { return int64(time.Since(epoch)) }
