package quorum

import (
	"context"
	"sync"
)

// Tracker counts the work that runs on behalf of one owner: the calls in
// progress and the requests of their rounds, which may go on after their
// round returned. Once closed it lets no new call start, and Wait returns
// when the count is zero. The zero value is ready to use and safe for
// concurrent use.
type Tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n falls to 0; made only for a waiter
}

// Enter counts a new call and reports true, or reports false once the
// Tracker is closed. A call that entered ends with Done.
func (t *Tracker) Enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

// Close lets no new call enter, and reports whether it was the first
// Close.
func (t *Tracker) Close() (first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first = !t.closed
	t.closed = true
	return first
}

// add counts n requests of a call that entered; a nil t counts nothing.
func (t *Tracker) add(n int) {
	if t == nil || n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += n
}

// Add counts work that a call that entered starts in the background,
// which ends with Done.
func (t *Tracker) Add() { t.add(1) }

// Done ends one call or request; a nil t counts nothing.
func (t *Tracker) Done() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// Wait returns nil once nothing counted by t runs, or ctx.Err() when ctx
// ends first. What starts while it waits is waited for as well.
func (t *Tracker) Wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
