// Package callctx holds the type of the contexts that locksmith makes for
// its calls to a node, so that package adapter, which reads them, and
// package quorum, which makes them, share it without making it public.
package callctx

import (
	"context"
	"time"
)

// Context is a context that nothing but its deadline ends while the calls
// made with it run: its maker cancels it only after they have returned.
type Context struct {
	context.Context
	// Unwaited means that the call runs on a goroutine of its own, which
	// its caller stops waiting for when the context ends: a call made
	// with it may run on that goroutine even if the client would go on
	// waiting past the deadline, since the caller does not.
	Unwaited bool
}

// WithTimeout returns context.WithTimeout(parent, timeout), as a Context
// when parent can never end (its Done returns nil), with unwaited set as
// given; for any other parent it returns the plain context, which can end
// before its deadline.
func WithTimeout(parent context.Context, timeout time.Duration, unwaited bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	if parent.Done() != nil {
		return ctx, cancel
	}
	return Context{ctx, unwaited}, cancel
}

// Of returns ctx as a live Context: ok is false for any other context and
// for one that has ended.
func Of(ctx context.Context) (c Context, ok bool) {
	c, ok = ctx.(Context)
	return c, ok && ctx.Err() == nil
}
