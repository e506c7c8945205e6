package redislock

import (
	"sync/atomic"
	"time"
)

// RetryStrategy decides whether and when Obtain tries again after the key
// was found held by another owner, and whether Refresh tries again after a
// failed request. The strategies of this package may be shared by
// concurrent calls; a LimitRetry or ExponentialBackoff keeps its count
// across all the calls that share it.
type RetryStrategy interface {
	// NextBackoff returns how long to wait before the next try, or a
	// duration below 1ns to stop trying.
	NextBackoff() time.Duration
}

type linearBackoff time.Duration

// LinearBackoff retries after the same backoff every time, for as long as
// the context allows (see Client.Obtain).
func LinearBackoff(backoff time.Duration) RetryStrategy {
	return linearBackoff(backoff)
}

// NoRetry tries once. It is the default when Options has no RetryStrategy.
func NoRetry() RetryStrategy {
	return linearBackoff(0)
}

func (r linearBackoff) NextBackoff() time.Duration {
	return time.Duration(r)
}

type limitedRetry struct {
	next  RetryStrategy
	max   int64
	count atomic.Int64
}

// LimitRetry allows at most max retries, each after the backoff s chooses.
// A nil s allows none.
func LimitRetry(s RetryStrategy, max int) RetryStrategy {
	return &limitedRetry{next: s, max: int64(max)}
}

func (r *limitedRetry) NextBackoff() time.Duration {
	if r.next == nil {
		return 0
	}
	for {
		n := r.count.Load()
		if n >= r.max {
			return 0
		}
		if r.count.CompareAndSwap(n, n+1) {
			return r.next.NextBackoff()
		}
	}
}

type exponentialBackoff struct {
	count                  atomic.Uint64
	minBackoff, maxBackoff time.Duration
}

// ExponentialBackoff retries after 2^(n+1) milliseconds the n-th time (4ms,
// 8ms, 16ms, ... growing no further after the 25th), but never less than
// min nor, when max is not zero, more than max. A min of at least 16ms is
// recommended.
func ExponentialBackoff(min, max time.Duration) RetryStrategy {
	return &exponentialBackoff{minBackoff: min, maxBackoff: max}
}

func (r *exponentialBackoff) NextBackoff() time.Duration {
	n := r.count.Add(1)
	d := time.Duration(int64(2)<<min(n, 25)) * time.Millisecond
	switch {
	case d < r.minBackoff:
		return r.minBackoff
	case r.maxBackoff != 0 && d > r.maxBackoff:
		return r.maxBackoff
	}
	return d
}
