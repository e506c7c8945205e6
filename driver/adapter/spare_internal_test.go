package adapter

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestSpareExpireLeavesALaterConnection runs the timer's function as a
// timer that fired for an earlier connection would, while the Spare keeps
// one put since: it must keep that one, for which Put set the timer again.
func TestSpareExpireLeavesALaterConnection(t *testing.T) {
	var gave []int
	s, err := NewSpare(time.Hour, func(conn int) { gave = append(gave, conn) })
	if err != nil {
		t.Fatal(err)
	}
	s.Put(1)
	s.expire()
	if len(gave) != 0 {
		t.Fatalf("expire gave back %v a moment after Put, want nothing", gave)
	}
	if conn, ok := s.Take(); !ok || conn != 1 {
		t.Fatalf("Take = %d, %v; want 1, true", conn, ok)
	}
	s.expire() // keeps none: nothing to give back
	if len(gave) != 0 {
		t.Fatalf("expire gave back %v with nothing kept, want nothing", gave)
	}
	s.Put(1)
	s.since = time.Now().Add(-time.Hour)
	s.expire()
	if len(gave) != 1 || gave[0] != 1 {
		t.Fatalf("expire gave back %v for a connection kept its keep time, want [1]", gave)
	}
	s.Release()
}

// TestSpareReleaseWaitsForTheTimersRelease has the keep time's timer give
// back a connection, slowly, while Release is called: Release returns only
// after that release has, so that a Wait built on it leaves nothing
// behind.
func TestSpareReleaseWaitsForTheTimersRelease(t *testing.T) {
	entered, unblock := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	s, err := NewSpare(time.Hour, func(int) {
		close(entered)
		<-unblock
		finished.Store(true)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Put(1)
	s.mu.Lock()
	s.since = time.Now().Add(-time.Hour)
	s.mu.Unlock()
	go s.expire()
	<-entered
	released := make(chan bool)
	go func() {
		s.Release()
		released <- finished.Load()
	}()
	// Give Release the time to return early, were it to.
	time.Sleep(20 * time.Millisecond)
	close(unblock)
	if !<-released {
		t.Fatal("Release returned before the timer's release of the connection did")
	}
}
