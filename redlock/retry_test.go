package redlock

import (
	"testing"
	"time"
)

func TestConstantBackoff(t *testing.T) {
	b := ConstantBackoff(10*time.Millisecond, 5*time.Millisecond, 3)
	for retry := 1; retry <= 3; retry++ {
		for range 100 {
			d, ok := b.NextDelay(retry)
			if !ok || d < 10*time.Millisecond || d >= 15*time.Millisecond {
				t.Fatalf("NextDelay(%d) = %v, %v; want a delay in [10ms, 15ms) and true", retry, d, ok)
			}
		}
	}
	if d, ok := b.NextDelay(4); ok {
		t.Errorf("NextDelay(4) after 3 retries = %v, true; want false", d)
	}
	if d, ok := NoRetry().NextDelay(1); ok {
		t.Errorf("NoRetry().NextDelay(1) = %v, true; want false", d)
	}
	if d, ok := ConstantBackoff(time.Millisecond, 0, 1).NextDelay(1); !ok || d != time.Millisecond {
		t.Errorf("without jitter NextDelay(1) = %v, %v; want exactly 1ms, true", d, ok)
	}
}

func TestExponentialBackoff(t *testing.T) {
	b := ExponentialBackoff(4*time.Millisecond, 50*time.Millisecond, 100)
	steps := []struct {
		retry int
		step  time.Duration
	}{
		{1, 4 * time.Millisecond},
		{2, 8 * time.Millisecond},
		{3, 16 * time.Millisecond},
		{4, 32 * time.Millisecond},
		{5, 50 * time.Millisecond},
		{6, 50 * time.Millisecond},
		{64, 50 * time.Millisecond},
		{100, 50 * time.Millisecond},
	}
	for _, s := range steps {
		for range 100 {
			d, ok := b.NextDelay(s.retry)
			if !ok || d < s.step/2 || d >= s.step {
				t.Fatalf("NextDelay(%d) = %v, %v; want a delay in [%v, %v) and true", s.retry, d, ok, s.step/2, s.step)
			}
		}
	}
	if d, ok := b.NextDelay(101); ok {
		t.Errorf("NextDelay(101) after 100 retries = %v, true; want false", d)
	}
}
