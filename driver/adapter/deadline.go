package adapter

import (
	"context"
	"time"

	"github.com/locksmith-go/locksmith/internal/callctx"
)

// WithTimeout is context.WithTimeout for contexts that nothing but their
// deadline ends, which [Inline] reports. locksmith makes its per-node
// contexts with it (see the driver package documentation); an adapter's
// tests use it to exercise the calls that run on the calling goroutine.
//
// When parent can never end (its Done returns nil: context.Background, or a
// context detached with context.WithoutCancel), the returned context can
// end only when timeout has passed or cancel is called, and the caller
// promises to call cancel only after every call made with it has returned:
// such a context ends only at its deadline while those calls run, and
// Inline reports it. For any other parent, WithTimeout returns
// context.WithTimeout(parent, timeout), which Inline does not report.
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return callctx.WithTimeout(parent, timeout, false)
}

// Inline reports whether ctx is a live context that nothing but its
// deadline can end while the call runs: one from [WithTimeout] whose parent
// can never end. A call with such a ctx may run on the calling goroutine
// through a client that bounds every wait and every socket read and write
// of the call by ctx's deadline: that client returns by the deadline, which
// is when ctx ends. Put its error through [ContextErr], as [Run] does.
//
// For any other ctx, including one derived from such a context, Inline
// returns false: an explicit cancel can end ctx before its deadline, and a
// client that only applies deadlines would go on waiting, so the call goes
// through Run.
func Inline(ctx context.Context) bool {
	_, ok := callctx.Of(ctx)
	return ok
}

// Unwaited reports whether ctx is a live context with which locksmith calls
// a Conn from a goroutine that its caller stops waiting for at ctx's
// deadline: a call of a round on several nodes. [Run] calls do on the
// calling goroutine for such a ctx, and an adapter that has another way to
// run a call there (a connection a [Spare] kept) has nothing to save by it.
// Inline reports every such ctx too.
func Unwaited(ctx context.Context) bool {
	c, ok := callctx.Of(ctx)
	return ok && c.Unwaited
}
