package adapter_test

import (
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

// released records what a Spare gave back.
type released struct {
	mu    sync.Mutex
	conns []int
	gave  chan struct{} // receives once per release
}

func newReleased() *released { return &released{gave: make(chan struct{}, 100)} }

func (r *released) release(conn int) {
	r.mu.Lock()
	r.conns = append(r.conns, conn)
	r.mu.Unlock()
	r.gave <- struct{}{}
}

func (r *released) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.conns...)
}

func newSpare(t *testing.T, keep time.Duration, r *released) *adapter.Spare[int] {
	t.Helper()
	s, err := adapter.NewSpare(keep, r.release)
	if err != nil {
		t.Fatalf("NewSpare(%v) = %v", keep, err)
	}
	return s
}

func TestNewSpareRejectsBadInput(t *testing.T) {
	release := func(int) {}
	for _, tc := range []struct {
		name    string
		keep    time.Duration
		release func(int)
	}{
		{"zero keep", 0, release},
		{"negative keep", -time.Second, release},
		{"nil release", time.Second, nil},
	} {
		s, err := adapter.NewSpare(tc.keep, tc.release)
		if err == nil || s != nil {
			t.Errorf("%s: NewSpare = %v, %v; want nil and an error", tc.name, s, err)
		}
	}
}

func TestSpareKeepsOneConnection(t *testing.T) {
	r := newReleased()
	s := newSpare(t, time.Hour, r)
	if conn, ok := s.Take(); ok {
		t.Fatalf("Take from a new Spare = %d, true; want none", conn)
	}
	if !s.Put(1) {
		t.Fatal("Put(1) into an empty Spare = false, want true")
	}
	if s.Put(2) {
		t.Fatal("Put(2) while the Spare keeps 1 = true, want false")
	}
	if conn, ok := s.Take(); !ok || conn != 1 {
		t.Fatalf("Take = %d, %v; want 1, true", conn, ok)
	}
	if conn, ok := s.Take(); ok {
		t.Fatalf("second Take = %d, true; want none", conn)
	}
	// The connection taken goes back in, and Release gives it back.
	if !s.Put(1) {
		t.Fatal("Put(1) after Take = false, want true")
	}
	s.Release()
	if got := r.got(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("released %v after Release, want [1]", got)
	}
	if conn, ok := s.Take(); ok {
		t.Fatalf("Take after Release = %d, true; want none", conn)
	}
	s.Release() // nothing kept: gives back nothing
	if got := r.got(); len(got) != 1 {
		t.Fatalf("released %v after a second Release, want [1]", got)
	}
	// A Spare released keeps a connection again.
	if !s.Put(3) {
		t.Fatal("Put(3) after Release = false, want true")
	}
	if conn, ok := s.Take(); !ok || conn != 3 {
		t.Fatalf("Take after Put(3) = %d, %v; want 3, true", conn, ok)
	}
}

func TestSpareGivesBackAnUnusedConnection(t *testing.T) {
	r := newReleased()
	s := newSpare(t, time.Millisecond, r)
	s.Put(7)
	select {
	case <-r.gave:
	case <-time.After(time.Minute):
		t.Fatal("the Spare did not give back its connection within 1m of a 1ms keep time")
	}
	if got := r.got(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("released %v, want [7]", got)
	}
	if conn, ok := s.Take(); ok {
		t.Fatalf("Take after the keep time = %d, true; want none", conn)
	}
	// The timer runs again for the next connection kept.
	s.Put(8)
	select {
	case <-r.gave:
	case <-time.After(time.Minute):
		t.Fatal("the Spare did not give back its second connection within 1m")
	}
	if got := r.got(); len(got) != 2 || got[1] != 8 {
		t.Fatalf("released %v, want [7 8]", got)
	}
}

func TestNilSpareKeepsNothing(t *testing.T) {
	var s *adapter.Spare[int]
	if s.Put(1) {
		t.Error("Put into a nil Spare = true, want false")
	}
	if conn, ok := s.Take(); ok {
		t.Errorf("Take from a nil Spare = %d, true; want none", conn)
	}
	s.Release()
}

// TestSpareHandsEachConnectionToOneCaller has goroutines take, use and put
// back a set of connections through one Spare, as the calls of a Conn do,
// and checks that no connection is ever in two callers' hands, and that
// every connection ends either given back by the Spare or put back by a
// caller.
func TestSpareHandsEachConnectionToOneCaller(t *testing.T) {
	r := newReleased()
	r.gave = make(chan struct{}, 1<<16)
	s := newSpare(t, 50*time.Microsecond, r)
	var (
		mu     sync.Mutex
		inUse  = map[int]bool{}
		closed = map[int]bool{} // given back by a caller
		next   = 0
	)
	use := func(conn int) {
		mu.Lock()
		defer mu.Unlock()
		if inUse[conn] {
			t.Errorf("connection %d is in two callers' hands", conn)
		}
		inUse[conn] = true
	}
	done := func(conn int) {
		mu.Lock()
		defer mu.Unlock()
		delete(inUse, conn)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				conn, ok := s.Take()
				if !ok {
					mu.Lock()
					next++
					conn = next
					mu.Unlock()
				}
				use(conn)
				done(conn)
				if !s.Put(conn) {
					mu.Lock()
					closed[conn] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	s.Release()
	gaveBack := map[int]bool{}
	for _, conn := range r.got() {
		if gaveBack[conn] || closed[conn] {
			t.Errorf("connection %d given back twice", conn)
		}
		gaveBack[conn] = true
	}
	// A connection kept, given back by the timer and then made again
	// cannot happen: each made connection has a number of its own. So
	// every connection made ends in exactly one of the two sets.
	for conn := 1; conn <= next; conn++ {
		if !gaveBack[conn] && !closed[conn] {
			t.Errorf("connection %d was neither given back nor put back", conn)
		}
	}
}
