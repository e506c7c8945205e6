package redlock

import (
	"strconv"
	"strings"
	"sync"
	"weak"
)

// liveLocks finds the Lock a Client handed out for a value, so that a
// Resume of that value in the same process continues the Lock instead of
// starting a second one whose extend rounds would not be ordered with the
// first one's, and so that Close finds the Locks to release. It holds the
// Locks weakly: a Lock the program dropped without Unlock is forgotten.
//
// A Lock is found by its value and its names together: a Resume of a
// held Lock's value on other keys makes a Lock of its own, which must
// not take the held one's place.
type liveLocks struct {
	mu      sync.Mutex
	byValue map[liveKey]weak.Pointer[Lock]
	sweepAt int // size of byValue at which forgotten Locks are swept out
}

// liveKey finds a Lock in liveLocks: its value, its first name, and its
// other names each prefixed with its length, "" for a Lock of one key.
type liveKey struct {
	value, first, rest string
}

func keyOf(value string, names []string) liveKey {
	k := liveKey{value: value, first: names[0]}
	if len(names) > 1 {
		var b strings.Builder
		for _, name := range names[1:] {
			b.WriteString(strconv.Itoa(len(name)))
			b.WriteByte(':')
			b.WriteString(name)
		}
		k.rest = b.String()
	}
	return k
}

// minSweep is the smallest size of liveLocks at which it sweeps.
const minSweep = 64

// add records l, a Lock with a fresh value, and returns it.
func (s *liveLocks) add(l *Lock) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(l)
	return l
}

// store records l, a Lock that no other goroutine has yet; the caller
// holds s.mu.
func (s *liveLocks) store(l *Lock) {
	if s.byValue == nil {
		s.byValue = make(map[liveKey]weak.Pointer[Lock])
	}
	sweep(s.byValue, &s.sweepAt)
	s.byValue[keyOf(l.value, l.req.names)] = weak.Make(l)
}

// findOrAdd returns the live Lock holding value on names, or else the
// Lock that newLock makes, recorded before any other call can look:
// two Resumes of one value at once get one Lock, and take their turns on
// it.
func (s *liveLocks) findOrAdd(value string, names []string, newLock func() *Lock) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.byValue[keyOf(value, names)].Value(); l != nil {
		return l
	}
	l := newLock()
	s.store(l)
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
	locks := make([]*Lock, 0, len(s.byValue))
	for _, p := range s.byValue {
		if l := p.Value(); l != nil {
			locks = append(locks, l)
		}
	}
	return locks
}
