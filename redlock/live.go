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
	if len(s.byValue) >= max(s.sweepAt, minSweep) {
		for v, p := range s.byValue {
			if p.Value() == nil {
				delete(s.byValue, v)
			}
		}
		s.sweepAt = 2 * len(s.byValue)
	}
	s.byValue[l.value] = p
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
