package redlock

import (
	"context"
	"sync"
)

// tracker counts the work that runs on behalf of a Client: its calls in
// progress, or the requests of its rounds, which may go on after their
// round returned (quorum.Round counts them through Add and Done). Once
// closed it lets no new call enter, and wait returns when the count is
// zero. The zero value is ready to use and safe for concurrent use.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n falls to 0; made only for a waiter
}

// enter counts a new call and reports true, or reports false once the
// tracker is closed. A call that entered ends with Done.
func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

// close lets no new call enter.
func (t *tracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
}

// Add counts n more requests, or work that a call that entered starts in
// the background; each ends with Done.
func (t *tracker) Add(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += n
}

// Done ends one call, request or piece of background work.
func (t *tracker) Done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// wait returns nil once nothing counted by t runs, or ctx.Err() when ctx
// ends first. What starts while it waits is waited for as well.
func (t *tracker) wait(ctx context.Context) error {
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
