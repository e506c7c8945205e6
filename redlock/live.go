package redlock

import (
	"slices"
	"sync"
	"weak"
)

// liveLocks finds the Lock a Client handed out for a value, so that a
// Resume of that value in the same process continues the Lock instead of
// starting a second one whose extend rounds would not be ordered with the
// first one's, and so that Close finds the Locks to release. It holds the
// Locks weakly: a Lock the program dropped without Unlock is forgotten.
//
// A value has one Lock, unless Resume took it on keys that its Lock does
// not hold: such a Lock, of one key, is kept apart, and must not take the
// first one's place.
type liveLocks struct {
	mu      sync.Mutex
	byValue map[string]weak.Pointer[Lock] // the first Lock of each value
	sweepAt int                           // size of byValue at which forgotten Locks are swept out
	// others holds the Locks that Resume made for a value whose first
	// Lock holds other keys.
	others        map[otherKey]weak.Pointer[Lock]
	othersSweepAt int
}

// otherKey finds a Lock in liveLocks.others.
type otherKey struct{ value, name string }

// minSweep is the smallest size of liveLocks at which it sweeps.
const minSweep = 64

// add records l, a Lock with a fresh value, and returns it.
func (s *liveLocks) add(l *Lock) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byValue == nil {
		s.byValue = make(map[string]weak.Pointer[Lock])
	}
	sweep(s.byValue, &s.sweepAt)
	s.byValue[l.value] = weak.Make(l)
	return l
}

// findOrAdd returns the live Lock holding value on name, or else the
// Lock that newLock makes, recorded before any other call can look:
// two Resumes of one value at once get one Lock, and take their turns on
// it. It returns nil when the first Lock of value holds name among other
// keys: a Lock of name alone would shorten or lengthen the key without
// that Lock knowing.
func (s *liveLocks) findOrAdd(value, name string, newLock func() *Lock) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.byValue[value].Value()
	if first != nil {
		switch names := first.names(); {
		case len(names) == 1 && names[0] == name:
			return first
		case slices.Contains(names, name):
			return nil
		}
		if l := s.others[otherKey{value, name}].Value(); l != nil {
			return l
		}
	}
	l := newLock()
	if first == nil {
		if s.byValue == nil {
			s.byValue = make(map[string]weak.Pointer[Lock])
		}
		sweep(s.byValue, &s.sweepAt)
		s.byValue[value] = weak.Make(l)
		return l
	}
	if s.others == nil {
		s.others = make(map[otherKey]weak.Pointer[Lock])
	}
	sweep(s.others, &s.othersSweepAt)
	s.others[otherKey{value, name}] = weak.Make(l)
	return l
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

// all returns the Locks that the program still refers to.
func (s *liveLocks) all() []*Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	locks := make([]*Lock, 0, len(s.byValue)+len(s.others))
	for _, p := range s.byValue {
		if l := p.Value(); l != nil {
			locks = append(locks, l)
		}
	}
	for _, p := range s.others {
		if l := p.Value(); l != nil {
			locks = append(locks, l)
		}
	}
	return locks
}
