package adapter

import (
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
