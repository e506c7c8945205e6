package redislock_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/compat/redislock"
)

func TestRetryStrategies(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		strategy redislock.RetryStrategy
		want     []time.Duration
	}{
		{"NoRetry", redislock.NoRetry(), []time.Duration{0, 0}},
		{"LinearBackoff", redislock.LinearBackoff(7 * ms), []time.Duration{7 * ms, 7 * ms, 7 * ms}},
		{"LimitRetry", redislock.LimitRetry(redislock.LinearBackoff(5*ms), 2), []time.Duration{5 * ms, 5 * ms, 0, 0}},
		{"LimitRetry zero", redislock.LimitRetry(redislock.LinearBackoff(5*ms), 0), []time.Duration{0}},
		{"LimitRetry negative", redislock.LimitRetry(redislock.LinearBackoff(5*ms), -1), []time.Duration{0}},
		{"LimitRetry nil", redislock.LimitRetry(nil, 3), []time.Duration{0}},
		{"ExponentialBackoff", redislock.ExponentialBackoff(0, 0), []time.Duration{4 * ms, 8 * ms, 16 * ms, 32 * ms}},
		{"ExponentialBackoff min", redislock.ExponentialBackoff(16*ms, 0), []time.Duration{16 * ms, 16 * ms, 16 * ms, 32 * ms}},
		{"ExponentialBackoff max", redislock.ExponentialBackoff(0, 20*ms), []time.Duration{4 * ms, 8 * ms, 16 * ms, 20 * ms, 20 * ms}},
		{"ExponentialBackoff limited", redislock.LimitRetry(redislock.ExponentialBackoff(0, 0), 2), []time.Duration{4 * ms, 8 * ms, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			for range tc.want {
				got = append(got, tc.strategy.NextBackoff())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("NextBackoff() gave %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExponentialBackoffStopsGrowing(t *testing.T) {
	s := redislock.ExponentialBackoff(0, 0)
	var last time.Duration
	for range 40 {
		last = s.NextBackoff()
	}
	if want := time.Duration(2<<25) * time.Millisecond; last != want {
		t.Errorf("backoff after 40 calls = %v, want %v", last, want)
	}
}

func TestLimitRetryIsSharedSafely(t *testing.T) {
	s := redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 10)
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if s.NextBackoff() > 0 {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := granted.Load(); got != 10 {
		t.Errorf("retries granted across goroutines = %d, want 10", got)
	}
}
