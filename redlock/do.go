package redlock

import (
	"context"
	"errors"
	"time"
)

// Do acquires a lock on key for ttl as Lock does, calls fn while holding
// it, and releases it when fn returns, also when fn panics.
//
// While fn runs the lock is extended automatically before its validity runs
// low (see WithRenewal). The context passed to fn is cancelled as soon as
// the lock can no longer be guaranteed, with a cause matching ErrLockLost,
// before the lock's validity ends; fn must stop using the resource then.
// It is also cancelled with a cause matching ErrHoldLimit when a bound set
// by WithMaxHold or WithMaxRenewals is reached, with ErrClosed when the
// Client is closed (which releases the lock), and when ctx is done.
// [LockFromContext] returns the lock, for its fencing token.
//
// Check the Err of the context fn gets right before each use of the
// resource: it also compares the clock with the lock's loss deadline, so it
// reports the loss on time even when a starved process runs the timers that
// close Done late. Contexts derived from it behave as [Lock.KeepAlive]
// says: only those made with context.WithValue check the clock too.
//
// Do returns the error of Lock when the lock is not acquired. Otherwise it
// returns fn's error joined with the cause of a lost lock or reached hold
// limit and with the error of the release, if any; nil when all went well.
// The cause is named once, whether fn returned it (context.Cause of its
// context, wrapped or not), its context's Err, or nothing; after a loss,
// a release that finds the lock gone adds nothing.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, []string{key}, ttl, fn)
}

// DoMulti is Do over several resources, acquired as by LockMulti.
func (c *Client) DoMulti(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, keys, ttl, fn)
}

func (c *Client) do(ctx context.Context, keys []string, ttl time.Duration, fn func(context.Context) error) error {
	if fn == nil {
		return invalidf("nil function")
	}
	return hold(ctx, fn, func() (*Lock, error) {
		return c.lock(ctx, keys, ttl, nil) // nil: the Client's own strategy, read once c is checked
	})
}

// hold calls fn while holding the lock that acquire returns, renewed, and
// releases it when fn returns, as Do says.
func hold(ctx context.Context, fn func(context.Context) error, acquire func() (*Lock, error)) (err error) {
	l, err := acquire()
	if err != nil {
		return err
	}
	fnCtx, stop := l.KeepAlive(ctx)
	defer func() {
		// Read the cause before stop, which cancels fnCtx as well.
		cause := context.Cause(fnCtx)
		stop()
		err = doResult(err, cause, l.Unlock(ctx))
	}()
	return fn(fnCtx)
}

// doResult is the error of a Do whose fn returned fnErr, whose context
// ended with cause and whose release returned unlockErr: each joined once.
// A loss, hold limit or Close is named once however fn returned it (its
// context's cause, wrapped or not, its context's Err, or nil), and an
// Unlock that found the lost lock not held adds nothing to the loss.
func doResult(fnErr, cause, unlockErr error) error {
	if errors.Is(unlockErr, ErrClosed) {
		unlockErr = nil // Close releases the lock
	}
	if !errors.Is(cause, ErrLockLost) && !errors.Is(cause, ErrHoldLimit) && !errors.Is(cause, ErrClosed) {
		return errors.Join(fnErr, unlockErr)
	}
	if errors.Is(cause, ErrLockLost) && errors.Is(unlockErr, ErrNotHeld) {
		unlockErr = nil
	}
	switch {
	case errors.Is(fnErr, cause):
		cause = nil // fn returned it
	case fnErr == context.Canceled:
		fnErr = nil // its context's Err, which the cause explains
	}
	return errors.Join(fnErr, cause, unlockErr)
}
