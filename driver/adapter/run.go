package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/internal/callctx"
)

// Run calls do with ctx and returns its result, or ctx.Err() as soon as ctx
// is done, whichever comes first, so that a client call that would go on
// waiting for its reply after ctx ended still returns in time, as
// [driver.Conn] requires.
//
// When ctx can end, do runs in a goroutine of its own, counted by b, and
// after Run returned early it finishes in the background: its result is
// discarded, and what bounds it is the client's own timeouts (a client that
// applies ctx's deadline to the socket ends it at that deadline). b is the
// Conn's [Background], whose Wait implements [driver.Waiter]; a nil b
// counts nothing. When ctx can never end (its Done returns nil), do runs on
// the calling goroutine.
//
// do also runs on the calling goroutine, counted by b while it runs, when
// ctx is one that locksmith made for a call on a goroutine that it stops
// waiting for at ctx's deadline: every call of a round of several nodes.
// Such a round returns by its deadline whatever the call does, and stops
// counting the call among its Client's requests once the deadline has
// passed (redlock's Client.Wait), so a goroutine of Run's would only wait
// in that goroutine's place. Run then returns when do does, which may be
// after ctx ended if the client's own timeouts end it later; b's Wait
// waits for it as for any call left behind.
//
// An error of do goes through [ContextErr], so an error that ctx caused
// matches ctx.Err(). A ctx already done when Run is called returns
// ctx.Err() without calling do.
func Run[T any](ctx context.Context, b *Background, do func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		// ctx can never end: nothing to wait for but the reply.
		return do(ctx)
	}
	if c, ok := callctx.Of(ctx); ok && c.Unwaited {
		// The calling goroutine is the one left behind if do overruns
		// ctx, and its own caller has stopped waiting for it by then.
		b.Begin()
		defer b.End()
		val, err := do(ctx)
		return val, ContextErr(ctx, err)
	}
	type result struct {
		val T
		err error
	}
	results := make(chan result, 1) // buffered: the goroutine never blocks
	call := func() {
		val, err := do(ctx)
		results <- result{val, err}
	}
	if b != nil {
		b.Go(call)
	} else {
		go call()
	}
	select {
	case r := <-results:
		return r.val, ContextErr(ctx, r.err)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// ContextErr returns err, made to match ctx.Err() when ctx caused it. Use it
// on the error of a client call made on the calling goroutine (see
// [Inline]); [Run] applies it itself.
//
// A client that applies ctx's deadline to the socket reports the deadline
// as an I/O timeout of its own, which can fire a moment before ctx itself
// reports it. When ctx is done, or its deadline has passed, ContextErr
// returns an error that matches both err and ctx.Err() (or
// context.DeadlineExceeded, which ctx.Err() is about to report); otherwise,
// and when err already matches it, err itself. ContextErr(ctx, nil) is nil.
func ContextErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	ctxErr := ctx.Err()
	if ctxErr == nil {
		deadline, ok := ctx.Deadline()
		if !ok || time.Now().Before(deadline) {
			return err
		}
		ctxErr = context.DeadlineExceeded
	}
	if errors.Is(err, ctxErr) {
		return err
	}
	return fmt.Errorf("%w (%w)", ctxErr, err)
}
