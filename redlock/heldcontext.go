package redlock

import "context"

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
