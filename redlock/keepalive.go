package redlock

import (
	"context"
	"sync"
	"time"
)

// KeepAlive extends l automatically in the background until stop is
// called, and returns a context derived from ctx for the work done under
// the lock.
//
// The context is cancelled, before l's validity ends, as soon as the lock
// can no longer be guaranteed; its cause (context.Cause) then matches
// ErrLockLost. It is cancelled with a cause matching ErrHoldLimit when a
// bound set by WithMaxHold or WithMaxRenewals is reached, with ErrReleased
// when l is unlocked, with ErrClosed when its Client is closed, and when
// ctx is done, after which renewal stops too.
// [LockFromContext] returns l from it.
//
// Its Err method also compares the clock with the lock's loss deadline
// (see WithRenewal), so a holder that checks Err before each use of the
// resource sees the loss on time even when timers run late. A context
// derived from it with context.WithValue checks the clock too. One derived
// with context.WithCancel, WithTimeout or WithDeadline has an Err of its
// own: it learns of the loss only once the returned context is cancelled.
//
// stop ends the renewal, waits for the background goroutine to return and
// cancels the context; it does not release the lock. It may be called more
// than once. If l is nil, not held, or already kept alive, the context is
// returned cancelled with the reason as its cause.
//
// Renewal rounds are detached from ctx's cancellation and bounded by the
// per-node timeout, like Unlock.
func (l *Lock) KeepAlive(ctx context.Context) (_ context.Context, stop func()) {
	parent := ctx
	if parent == nil {
		parent = context.Background()
	}
	kctx, cancel := context.WithCancelCause(parent)
	r := &renewal{l: l, ctx: kctx, cancel: cancel, changed: make(chan struct{}, 1)}
	if cause := l.startKeepAlive(ctx, r); cause != nil {
		cancel(cause)
		return &heldContext{Context: kctx, lock: l}, func() { cancel(context.Canceled) }
	}
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer l.client.calls.Done() // entered by startKeepAlive
		defer close(done)
		r.run(stopCh)
		l.mu.Lock()
		if l.renewal == r {
			l.renewal = nil
		}
		r.lossTimer.Stop()
		l.mu.Unlock()
	}()
	var once sync.Once
	return &heldContext{Context: kctx, lock: l, r: r}, func() {
		once.Do(func() {
			close(stopCh)
			<-done
			cancel(context.Canceled)
		})
	}
}

// startKeepAlive checks that l can be kept alive and makes r its renewal,
// with the loss timer armed. It returns the reason when it cannot.
func (l *Lock) startKeepAlive(ctx context.Context, r *renewal) error {
	if ctx == nil {
		return invalidf("nil Context")
	}
	if err := l.check("KeepAlive"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.unlocking:
		return ErrReleased
	case l.renewal != nil:
		return invalidf("KeepAlive of a lock already kept alive")
	case !time.Now().Before(l.validUntil):
		return ErrExpired
	case !l.client.calls.enter():
		return ErrClosed
	}
	r.keys = l.req.names
	l.renewal = r
	// The loss deadline fires on its own timer so that it is met even
	// while a renewal round is in flight; setValidity re-arms it whenever
	// the validity changes.
	r.armed = l.client.cfg.lossDeadline(l.validUntil, l.ttl)
	r.lossTimer = time.AfterFunc(time.Until(r.armed), func() { r.lost(r.lossCause()) })
	return nil
}
