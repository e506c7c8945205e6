package faultproxy

import (
	"sync"
	"testing"
	"time"
)

// TestLineReleasesEveryWaiter checks that every waiter of a Line returns,
// and never before its due time, whatever the order they came in.
func TestLineReleasesEveryWaiter(t *testing.T) {
	line := NewLine()
	defer line.Close()
	offsets := []time.Duration{3 * ms, 0, 250 * time.Microsecond, 2 * ms, -ms, 250 * time.Microsecond}
	var wg sync.WaitGroup
	early := make(chan time.Duration, len(offsets))
	for _, offset := range offsets {
		wg.Go(func() {
			due := line.now() + offset
			line.waitUntil(due, make(chan struct{}, 1))
			if now := line.now(); now < due {
				early <- due - now
			}
		})
	}
	wg.Wait()
	close(early)
	for d := range early {
		t.Errorf("a waiter returned %v before its due time", d)
	}
}

func TestLineCloseReleasesWaiters(t *testing.T) {
	line := NewLine()
	returned := make(chan struct{})
	go func() {
		line.waitUntil(line.now()+time.Hour, make(chan struct{}, 1))
		close(returned)
	}()
	line.Close()
	<-returned   // hangs, and the test times out, if Close does not release it
	line.Close() // idempotent
}
