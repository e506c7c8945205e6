// Package adapt holds what locksmith's adapter modules share: running a
// client call so that it returns as soon as its context ends, recognizing
// the per-node contexts that only their deadline can end (so that a client
// which applies deadlines itself can run a call on the caller's goroutine),
// making errors caused by the context match it, and marking a NOSCRIPT
// reply.
package adapt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// Run calls do and returns its result, or ctx.Err() as soon as ctx is done,
// whichever comes first. When ctx can end, do runs in a goroutine of its
// own, counted by b, which finishes in the background after Run returned
// early; clients that apply ctx's deadline to the socket bound that.
func Run[T any](ctx context.Context, b *Background, do func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		// ctx can never end: nothing to wait for but the reply.
		return do(ctx)
	}
	type result struct {
		val T
		err error
	}
	results := make(chan result, 1) // buffered: the goroutine never blocks
	b.Go(func() {
		val, err := do(ctx)
		results <- result{val, err}
	})
	select {
	case r := <-results:
		return r.val, ContextErr(ctx, r.err)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// ContextErr makes sure that an error which ctx caused matches ctx.Err().
// A client that applies ctx's deadline to the socket reports it as an I/O
// timeout, which can fire a moment before ctx itself reports the deadline;
// the error then matches context.DeadlineExceeded, as ctx.Err() is about
// to.
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

// NoScript marks err, a server's NOSCRIPT error reply, so that it also
// matches driver.ErrNoScript while keeping the client's own error in the
// chain.
func NoScript(err error) error {
	return noScriptError{err}
}

type noScriptError struct {
	err error
}

func (e noScriptError) Error() string { return e.err.Error() }

func (e noScriptError) Unwrap() []error { return []error{driver.ErrNoScript, e.err} }
