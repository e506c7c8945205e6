package redlock

import (
	"sync"
	"weak"
)

// liveLocks finds the Lock a Client handed out for a value, so that a
// Resume of that value in the same process continues the Lock instead of
// starting a second one whose extend rounds would not be ordered with the
// first one's. It holds the Locks weakly: a Lock the program dropped
// without Unlock is forgotten.
type liveLocks struct {
	mu      sync.Mutex
	byValue map[string]weak.Pointer[Lock]
	sweepAt int // size of byValue at which forgotten Locks are swept out
}

// minSweep is the smallest size of liveLocks at which it sweeps.
const minSweep = 64

func (s *liveLocks) add(l *Lock) {
	p := weak.Make(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byValue == nil {
		s.byValue = make(map[string]weak.Pointer[Lock])
	}
	sweep(s.byValue, &s.sweepAt)
	s.byValue[l.value] = p
}

// sweep deletes from m the entries whose value was collected, once m has
// grown to *sweepAt entries (at least minSweep), and sets *sweepAt to
// twice what is left: each sweep is paid for by as many additions.
func sweep[K comparable, V any](m map[K]weak.Pointer[V], sweepAt *int) {
	if len(m) < max(*sweepAt, minSweep) {
		return
	}
	for k, p := range m {
		if p.Value() == nil {
			delete(m, k)
		}
	}
	*sweepAt = 2 * len(m)
}

// remove forgets l, a Lock that Resume made and never handed out. An
// unlocked Lock stays until it is dropped, so that a Resume of its value
// is refused with ErrReleased.
func (s *liveLocks) remove(l *Lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.byValue[l.value]; ok && p.Value() == l {
		delete(s.byValue, l.value)
	}
}

// find returns the live Lock holding value, or nil.
func (s *liveLocks) find(value string) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byValue[value].Value()
}
