package adapt

import (
	"context"
	"time"
)

// deadlineOnly marks a context that nothing but its deadline can end while
// calls made with it run. It is made only by WithTimeout.
type deadlineOnly struct {
	context.Context
}

// WithTimeout is context.WithTimeout for the per-node calls of a round. When
// parent can never end (its Done returns nil: context.Background, or a
// context detached with context.WithoutCancel), the returned context can
// end only when timeout has passed or cancel is called, and the caller
// promises to call cancel only after every call made with it has returned.
// Such a context ends only at its deadline, which [Inline] recognizes.
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	if parent.Done() != nil {
		return ctx, cancel
	}
	return deadlineOnly{ctx}, cancel
}

// Inline reports whether a call with ctx may run on the calling goroutine
// through a client that applies ctx's deadline to every wait and socket
// read and write of the call: that client returns by the deadline, and so
// as soon as ctx is done, when ctx is a live context from WithTimeout that
// only its deadline can end. For any other ctx, which an explicit cancel
// can end before its deadline, such a client would go on waiting, so the
// call goes through [Run]. An inline call's error goes through
// [ContextErr] like Run's.
func Inline(ctx context.Context) bool {
	_, ok := ctx.(deadlineOnly)
	return ok && ctx.Err() == nil
}
