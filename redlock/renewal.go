package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// Do acquires a lock on key for ttl as Lock does, calls fn while holding
// it, and releases it when fn returns, also when fn panics.
//
// While fn runs the lock is extended automatically before its validity runs
// low (see WithRenewal). The context passed to fn is cancelled as soon as
// the lock can no longer be guaranteed, with a cause matching ErrLockLost,
// before the lock's validity ends; fn must stop using the resource then.
// Check ctx.Err() right before each use: it also compares the clock with
// the lock's deadline, so it reports the loss on time even when a starved
// process runs the timers that close ctx.Done() late. [LockFromContext]
// returns the lock, for its fencing token.
// It is also cancelled with a cause matching ErrHoldLimit when a bound set
// by WithMaxHold or WithMaxRenewals is reached, and when ctx is done.
//
// Do returns the error of Lock when the lock is not acquired. Otherwise it
// returns fn's error joined with the cause of a lost lock or reached hold
// limit and with the error of the release, if any; nil when all went well.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, []string{key}, ttl, fn)
}

// DoMulti is Do over several resources, acquired as by LockMulti.
func (c *Client) DoMulti(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, keys, ttl, fn)
}

func (c *Client) do(ctx context.Context, keys []string, ttl time.Duration, fn func(context.Context) error) (err error) {
	if fn == nil {
		return invalidf("nil function")
	}
	l, err := c.lock(ctx, keys, ttl, nil) // nil: the Client's own strategy, read once c is checked
	if err != nil {
		return err
	}
	fnCtx, stop := l.KeepAlive(ctx)
	defer func() {
		// Read the cause before stop, which cancels fnCtx as well.
		cause := context.Cause(fnCtx)
		stop()
		unlockErr := l.Unlock(ctx)
		if errors.Is(cause, ErrLockLost) || errors.Is(cause, ErrHoldLimit) {
			err = errors.Join(err, cause, unlockErr)
		} else {
			err = errors.Join(err, unlockErr)
		}
	}()
	return fn(fnCtx)
}

// KeepAlive extends l automatically in the background until stop is
// called, and returns a context derived from ctx for the work done under
// the lock.
//
// The context is cancelled, before l's validity ends, as soon as the lock
// can no longer be guaranteed; its cause (context.Cause) then matches
// ErrLockLost. Its Err method also compares the clock with the lock's
// deadline, so a holder that checks ctx.Err() before each use of the
// resource sees the loss on time even when the timers that close
// ctx.Done() run late. It is cancelled with a cause matching ErrHoldLimit
// when a bound set by WithMaxHold or WithMaxRenewals is reached, with
// ErrReleased when l is unlocked, and when ctx is done, after which renewal
// stops too. [LockFromContext] returns l from it.
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

// LockFromContext returns the lock held for ctx: the lock of [Client.Do]
// for the context passed to its function, or the lock of
// [Lock.KeepAlive] for the context it returned, and for contexts derived
// from those. It reports false for any other context.
//
// Use it to read the fencing token of a lock held by Do ([Lock.Token]),
// or how long it is still valid.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, _ := ctx.Value(heldLockKey{}).(*Lock)
	return l, l != nil
}

// heldLockKey is the context key of LockFromContext.
type heldLockKey struct{}

// heldContext is the context that KeepAlive returns and Do passes to its
// function. Its Done channel is closed by the renewal goroutine and the
// loss timer, which a starved process can run late; Err also checks the
// clock, so that a holder that checks Err before each use of the resource
// never relies on the lock past its loss margin, however late the timers
// are.
type heldContext struct {
	context.Context
	lock *Lock
	r    *renewal // nil when KeepAlive refused
}

func (c *heldContext) Value(key any) any {
	if key == (heldLockKey{}) {
		return c.lock
	}
	return c.Context.Value(key)
}

func (c *heldContext) Err() error {
	if err := c.Context.Err(); err != nil || c.r == nil {
		return err
	}
	c.r.checkDeadline()
	return c.Context.Err()
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

// renewal is the state of one KeepAlive.
type renewal struct {
	l      *Lock
	ctx    context.Context // cancelled when renewal ends, with the reason
	cancel context.CancelCauseFunc
	keys   []string

	// changed receives a value when the lock's validity changed, so that
	// the renewal goroutine computes its next renewal point again.
	changed chan struct{}
	// lossTimer declares the lock lost at its loss deadline, armed is
	// the deadline it was last set for. Both are set before the renewal
	// starts and changed under l.mu.
	lossTimer *time.Timer
	armed     time.Time

	reported atomic.Bool // LockLost was reported

	mu      sync.Mutex
	lastErr error // of the last failed renewal round
}

// rearm moves the loss timer to deadline and wakes the renewal goroutine.
// The caller holds l.mu. A lock already declared lost stays lost: its
// context is cancelled for good.
func (r *renewal) rearm(deadline time.Time) {
	r.armed = deadline
	r.lossTimer.Reset(time.Until(deadline))
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// lost gives the lock up with cause. LockLost is reported once, by the
// call whose cause ended the context, not when stop, the caller or an
// earlier loss got there first.
func (r *renewal) lost(cause error) {
	r.cancel(cause)
	if context.Cause(r.ctx) == cause && r.reported.CompareAndSwap(false, true) {
		r.l.client.cfg.obs.lockLost(r.ctx, r.keys, r.l.value, cause)
	}
}

// lossCause describes a lock whose loss margin was reached before it was
// renewed.
func (r *renewal) lossCause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cause := fmt.Errorf("%w: not renewed before the loss margin", ErrLockLost)
	if r.lastErr != nil {
		cause = fmt.Errorf("%w: %w", cause, r.lastErr)
	}
	return cause
}

// lossDeadline returns when the lock counts as lost unless renewed: its
// validity less the loss margin. ok is false once Unlock has started.
func (r *renewal) lossDeadline() (deadline time.Time, ok bool) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unlocking {
		return time.Time{}, false
	}
	return l.client.cfg.lossDeadline(l.validUntil, l.ttl), true
}

// lossDeadline returns when a lock valid until until, counted with the
// given TTL, counts as lost unless renewed: the loss timer and Err share
// it.
func (c *config) lossDeadline(until time.Time, ttl time.Duration) time.Time {
	return until.Add(-share(ttl, c.lossMargin))
}

// checkDeadline ends the context at once when the lock was unlocked or
// its loss deadline has passed, for Err to report even before the
// goroutines that watch for those have run.
func (r *renewal) checkDeadline() {
	deadline, ok := r.lossDeadline()
	switch {
	case !ok:
		r.cancel(ErrReleased)
	case !time.Now().Before(deadline):
		r.lost(r.lossCause())
	}
}

// wake is why a renewal's wait ended.
type wake int

const (
	wakeTime    wake = iota // the time waited for came
	wakeChanged             // the lock's validity changed
	wakeStop                // stop was called or the context is done
)

// run extends the lock each time its validity falls to the renewal point,
// until stop is closed, the context is done, or the lock is lost, released
// or at a hold limit, in which case it cancels the context with the reason.
// Whenever the validity changes (an Extend of the holder's, a renewal, a
// failed round) it computes the renewal point again.
func (r *renewal) run(stop <-chan struct{}) {
	l, ctx := r.l, r.ctx
	cfg := &l.client.cfg
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(d time.Duration) wake {
		timer.Reset(d)
		select {
		case <-timer.C:
			return wakeTime
		case <-r.changed:
			timer.Stop()
			return wakeChanged
		case <-stop:
		case <-ctx.Done():
		}
		return wakeStop
	}

	renewals := 0
	for {
		l.mu.Lock()
		until, ttl, unlocking := l.validUntil, l.ttl, l.unlocking
		l.mu.Unlock()
		if unlocking {
			r.cancel(ErrReleased)
			return
		}
		if ctx.Err() != nil {
			return
		}
		renewAt := until.Add(-share(ttl, cfg.renewAt))
		if limitAt, cause := l.holdLimit(renewAt, renewals); cause != nil {
			switch wait(time.Until(limitAt)) {
			case wakeTime:
				r.cancel(cause)
				return
			case wakeChanged:
				continue
			}
			return
		}
		switch wait(time.Until(renewAt)) {
		case wakeChanged:
			continue
		case wakeStop:
			return
		}
		switch err := r.renew(stop); {
		case err == nil:
			renewals++
		case errors.Is(err, errStopped):
			return
		case errors.Is(err, ErrReleased):
			r.cancel(ErrReleased)
			return
		case isGone(err):
			// Too many nodes answered that the lock is gone: no retry
			// can win it back.
			r.lost(fmt.Errorf("%w: %w", ErrLockLost, err))
			return
		default:
			r.mu.Lock()
			r.lastErr = err
			r.mu.Unlock()
			// Node errors may pass; retry after a node timeout unless
			// the validity changes first, until the loss timer fires.
			l.mu.Lock()
			pause := l.req.nodeTimeout
			l.mu.Unlock()
			if wait(pause) == wakeStop {
				return
			}
			// Make the renewal point due again at once, unless the
			// validity changed meanwhile.
		}
	}
}

// renew runs one renewal round with the lock's current request, once it is
// the lock's turn. It returns errStopped when stop was closed or the
// context ended while it waited, ErrReleased after Unlock, and a lock
// loss when the loss deadline passed before the round could start.
func (r *renewal) renew(stop <-chan struct{}) error {
	l := r.l
	if err := l.takeTurn(r.ctx, stop); err != nil {
		return errStopped
	}
	defer l.endTurn()
	switch deadline, ok := r.lossDeadline(); {
	case !ok:
		return ErrReleased
	case !time.Now().Before(deadline):
		// Past the loss deadline the lock counts as lost even if the
		// timer that says so has not run yet: renewing it would hand a
		// caller who may already have stopped a lock it does not know of.
		r.lost(r.lossCause())
		return errStopped
	}
	l.mu.Lock()
	req := l.req
	l.mu.Unlock()
	return l.extend(context.WithoutCancel(r.ctx), req)
}

// isGone reports whether err is an extend round in which too few nodes
// could still hold the lock for any retry to win it back.
func isGone(err error) bool {
	var qe *QuorumError
	return errors.As(err, &qe) && quorum.Gone(qe.Refused, qe.Nodes)
}

// holdLimit returns when renewal must stop for a bound of WithMaxHold or
// WithMaxRenewals, and the cause to report; a nil cause when no bound is
// reached before the renewal due at renewAt.
func (l *Lock) holdLimit(renewAt time.Time, renewals int) (time.Time, error) {
	cfg := &l.client.cfg
	if cfg.maxHold > 0 {
		if holdUntil := l.acquired.Add(cfg.maxHold); !holdUntil.After(renewAt) {
			return holdUntil, fmt.Errorf("%w: held for the maximum of %v", ErrHoldLimit, cfg.maxHold)
		}
	}
	if cfg.limitRenewals && renewals >= cfg.maxRenewals {
		return renewAt, fmt.Errorf("%w: renewed the maximum of %d times", ErrHoldLimit, cfg.maxRenewals)
	}
	return time.Time{}, nil
}

// share returns the given share of ttl.
func share(ttl time.Duration, f float64) time.Duration {
	return time.Duration(float64(ttl) * f)
}
