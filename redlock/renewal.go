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
		case <-l.client.closed:
			r.cancel(ErrClosed)
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
// could still hold the lock for any retry to win it back: those that
// refused, and those that the lock's acquire was not sent to.
func isGone(err error) bool {
	var qe *QuorumError
	return errors.As(err, &qe) && quorum.Gone(qe.Refused+unsent(qe.Errors), qe.Nodes)
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

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
