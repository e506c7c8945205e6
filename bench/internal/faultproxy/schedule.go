package faultproxy

import "time"

// The thresholds of a Line's waiting, from measurements on the 2-core
// benchmark host: time.Sleep of anything under 1 ms takes about 1.1 ms
// (the runtime rounds an idle wait in the network poller up to a
// millisecond), and sleeps of 1 ms or more wake 0.1-0.25 ms late.
const (
	// spinWindow is how long before a due time a Line stops sleeping and
	// spins (yielding to other goroutines between looks at the clock).
	spinWindow = time.Millisecond
	// minSleep is the shortest sleep a Line takes: a shorter one would
	// last as long.
	minSleep = time.Millisecond
)

// A schedule is the queue of a Line's waiters, earliest due first, and the
// rule for what the Line does until the next one is due. It reads no
// clock: times are offsets from the Line's start on the monotonic clock,
// passed in by the caller, so that the rule is tested with made-up times.
type schedule struct {
	waiters []waiter // a binary min-heap ordered by waiter.before
	added   uint64   // waiters added so far: the next waiter's seq
}

// A waiter is a goroutine waiting on a Line for its due time.
type waiter struct {
	due time.Duration
	seq uint64 // orders waiters with the same due time as they came
	// ready receives one value when due has passed. The waiting
	// goroutine owns it, with room for that one value, so that the
	// Line's send never blocks.
	ready chan<- struct{}
}

func (w waiter) before(o waiter) bool {
	return w.due < o.due || (w.due == o.due && w.seq < o.seq)
}

// An action is what a Line's goroutine does between two looks at its
// schedule.
type action int

const (
	// idle: nothing is queued; wait for a waiter to arrive.
	idle action = iota
	// sleep: the earliest waiter is far off; sleep for the duration
	// returned by next, or until an earlier waiter arrives.
	sleep
	// spin: the earliest waiter is due within about spinWindow+minSleep,
	// closer than a sleep can wake; yield once and look again.
	spin
)

func (a action) String() string {
	switch a {
	case idle:
		return "idle"
	case sleep:
		return "sleep"
	case spin:
		return "spin"
	}
	return "action(?)"
}

// add queues a waiter due at due, and reports whether it is now the
// earliest, which may shorten the Line's sleep.
func (s *schedule) add(due time.Duration, ready chan<- struct{}) (earliest bool) {
	s.waiters = append(s.waiters, waiter{due: due, seq: s.added, ready: ready})
	s.added++
	s.up(len(s.waiters) - 1)
	return s.waiters[0].seq == s.added-1
}

// popDue removes and returns the earliest waiter if it is due at now.
func (s *schedule) popDue(now time.Duration) (waiter, bool) {
	if len(s.waiters) == 0 || s.waiters[0].due > now {
		return waiter{}, false
	}
	w := s.waiters[0]
	last := len(s.waiters) - 1
	s.waiters[0] = s.waiters[last]
	s.waiters[last] = waiter{} // drop the channel reference
	s.waiters = s.waiters[:last]
	s.down(0)
	return w, true
}

// next returns what to do at now, once popDue has released every waiter
// due, and for sleep how long: until spinWindow before the earliest due
// time. It sleeps only when that sleep is at least minSleep.
func (s *schedule) next(now time.Duration) (action, time.Duration) {
	if len(s.waiters) == 0 {
		return idle, 0
	}
	if rest := s.waiters[0].due - now - spinWindow; rest >= minSleep {
		return sleep, rest
	}
	return spin, 0
}

func (s *schedule) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.waiters[i].before(s.waiters[parent]) {
			return
		}
		s.waiters[i], s.waiters[parent] = s.waiters[parent], s.waiters[i]
		i = parent
	}
}

func (s *schedule) down(i int) {
	for {
		least := i
		if left := 2*i + 1; left < len(s.waiters) && s.waiters[left].before(s.waiters[least]) {
			least = left
		}
		if right := 2*i + 2; right < len(s.waiters) && s.waiters[right].before(s.waiters[least]) {
			least = right
		}
		if least == i {
			return
		}
		s.waiters[i], s.waiters[least] = s.waiters[least], s.waiters[i]
		i = least
	}
}
