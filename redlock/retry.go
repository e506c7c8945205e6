package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryStrategy decides whether and how long Lock waits before another
// attempt after a failed one. Implementations must be safe for concurrent
// use: one strategy serves every Lock call of a Client.
type RetryStrategy interface {
	// NextDelay returns the pause before retry number retry (1 before the
	// second attempt) and false when no retry is left.
	NextDelay(retry int) (time.Duration, bool)
}

// validator is implemented by the ready-made strategies so that New can
// reject bad parameters instead of clamping them.
type validator interface {
	validate() error
}

// NoRetry returns a strategy that makes Lock give up after one attempt, like
// TryLock.
func NoRetry() RetryStrategy { return constantBackoff{} }

// ConstantBackoff returns a strategy that retries up to maxRetries times,
// pausing delay plus a random extra in [0, jitter) before each retry. The
// random part spreads out clients that failed together, so they do not
// collide again.
//
// New reports an error if delay or jitter is negative or maxRetries is
// negative.
func ConstantBackoff(delay, jitter time.Duration, maxRetries int) RetryStrategy {
	return constantBackoff{delay: delay, jitter: jitter, maxRetries: maxRetries}
}

type constantBackoff struct {
	delay, jitter time.Duration
	maxRetries    int
}

func (b constantBackoff) NextDelay(retry int) (time.Duration, bool) {
	if retry > b.maxRetries {
		return 0, false
	}
	return b.delay + randomBelow(b.jitter), true
}

func (b constantBackoff) validate() error {
	switch {
	case b.delay < 0:
		return invalidf("retry delay %v is negative", b.delay)
	case b.jitter < 0:
		return invalidf("retry jitter %v is negative", b.jitter)
	case b.maxRetries < 0:
		return invalidf("retry count %d is negative", b.maxRetries)
	}
	return nil
}

// ExponentialBackoff returns a strategy that retries up to maxRetries times
// with a pause that doubles from base on each retry up to max. Each pause is
// drawn at random from the upper half of its step, [step/2, step), which
// keeps both the growth and the spread.
//
// New reports an error if base is not positive, max is below base or
// maxRetries is negative.
func ExponentialBackoff(base, max time.Duration, maxRetries int) RetryStrategy {
	return exponentialBackoff{base: base, max: max, maxRetries: maxRetries}
}

type exponentialBackoff struct {
	base, max  time.Duration
	maxRetries int
}

func (b exponentialBackoff) NextDelay(retry int) (time.Duration, bool) {
	if retry > b.maxRetries {
		return 0, false
	}
	step := b.max
	// Stop doubling once past max; this also keeps the shift from
	// overflowing on long retry budgets.
	if shift := retry - 1; shift < 62 && b.base <= b.max>>shift {
		step = b.base << shift
	}
	half := step / 2
	return half + randomBelow(step-half), true
}

func (b exponentialBackoff) validate() error {
	switch {
	case b.base <= 0:
		return invalidf("retry base delay %v must be positive", b.base)
	case b.max < b.base:
		return invalidf("retry max delay %v is below the base delay %v", b.max, b.base)
	case b.maxRetries < 0:
		return invalidf("retry count %d is negative", b.maxRetries)
	}
	return nil
}

// randomBelow returns a random duration in [0, d), or 0 when d <= 0.
// Jitter needs no unpredictability, only spread, so math/rand serves.
func randomBelow(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// lock acquires names for ttl, retrying as retry allows; a nil retry is
// the Client's strategy, read only once c is known to be usable.
func (c *Client) lock(ctx context.Context, names []string, ttl time.Duration, retry RetryStrategy) (l *Lock, err error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	req, err := c.newRequest(names, ttl)
	if err != nil {
		return nil, err
	}
	trace := c.cfg.obs.startLock(ctx, req, len(c.nodes))
	if trace != nil {
		defer func() { trace.done(l, err) }()
	}
	return c.retry(ctx, req, retry, func(attempt int) (*Lock, error) {
		trace.attemptStart(attempt)
		return c.attempt(ctx, req, trace)
	})
}

// retry makes attempts until one returns a Lock or an error that is no
// *QuorumError, retry gives up or ctx ends. Between attempts it waits for
// the release of the keys of wants (see waiter.wait). A nil retry is the
// Client's strategy.
func (c *Client) retry(ctx context.Context, wants request, retry RetryStrategy, attempt func(attempt int) (*Lock, error)) (l *Lock, err error) {
	if retry == nil {
		retry = c.cfg.retry
	}
	var w *waiter // made at the first wait
	defer func() { w.leave(l != nil) }()
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		}
		l, err := attempt(n)
		if err == nil {
			return l, nil
		}
		var qe *QuorumError
		if !errors.As(err, &qe) {
			return nil, err
		}
		qe.Attempts = n
		if ctx.Err() != nil {
			return nil, withContextError(qe, ctx.Err())
		}
		delay, ok := retry.NextDelay(n)
		if !ok {
			return nil, qe
		}
		if w == nil {
			w = &waiter{client: c}
		}
		switch err := w.wait(ctx, wants, delay); {
		case errors.Is(err, ErrClosed):
			return nil, fmt.Errorf("%w: %w", ErrClosed, qe)
		case err != nil:
			return nil, withContextError(qe, err)
		}
	}
}
