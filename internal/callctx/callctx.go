// Package callctx holds the type of the contexts that locksmith makes for
// its calls to a node, so that package quorum, which makes them, and
// package adapter, which reads them, share it without making it public.
package callctx

import (
	"context"
	"time"
)

// Context is a context that nothing but its deadline ends while the calls
// made with it run: its maker cancels it only after they have returned.
type Context struct {
	context.Context
	// Unwaited means that the call runs on a goroutine that its maker
	// stops waiting for when the deadline passes: a round of several
	// nodes returns by then whatever the call does, and does not count
	// the call among its Client's requests after that. A call made with
	// it may run its client on that goroutine even if the client can go
	// on past the deadline, since no caller waits for it.
	Unwaited bool
}

// WithTimeout returns context.WithTimeout(parent, timeout): as a Context,
// with unwaited as given, when parent can never end (its Done returns
// nil); as the plain context, which can end before its deadline, for any
// other parent.
func WithTimeout(parent context.Context, timeout time.Duration, unwaited bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	if parent.Done() != nil {
		return ctx, cancel
	}
	return Context{ctx, unwaited}, cancel
}

// Of returns ctx as a live Context: ok is false for any other context,
// including one derived from a Context, and for one that has ended.
func Of(ctx context.Context) (c Context, ok bool) {
	c, ok = ctx.(Context)
	return c, ok && ctx.Err() == nil
}
