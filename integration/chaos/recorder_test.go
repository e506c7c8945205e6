package chaos

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// recorder collects what the workers did, on the referee clock that starts
// at base. It is safe for concurrent use.
type recorder struct {
	base time.Time

	nextID atomic.Int64

	mu        sync.Mutex
	grants    []grant
	rmws      []rmw
	attempted map[string]int
	granted   map[string]int
	failed    map[string]int
	// failedHeld counts the failed Lock calls whose last round was
	// refused by so many nodes that no quorum could grant it (another
	// owner held the resource), and failedSkipped those whose last round
	// skipped a node behind or failing.
	failedHeld, failedSkipped int
	latencies                 []time.Duration // of Lock calls that granted
	skipped                   int             // uses given up because the validity had (nearly) passed
	pauses                    int             // client-side pauses between acquiring and using
	pauseTime                 time.Duration
	abandoned                 int // locks left to expire instead of being released
	// lateCancels counts, per worker kind, the contexts of lost renewed
	// locks seen cancelled only after the lock's validity had ended, and
	// maxCancelDelay is the longest such delay per kind.
	lateCancels    map[string]int
	maxCancelDelay map[string]time.Duration
	unexpect       []string

	store    fencedStore
	counters counters
}

func newRecorder() *recorder {
	return &recorder{
		base:           time.Now(),
		attempted:      map[string]int{},
		granted:        map[string]int{},
		failed:         map[string]int{},
		lateCancels:    map[string]int{},
		maxCancelDelay: map[string]time.Duration{},
		store:          fencedStore{highest: map[string]uint64{}},
		counters:       counters{values: map[string]*atomic.Int64{}, completed: map[string]int64{}},
	}
}

// now reads the referee clock.
func (r *recorder) now() time.Duration { return time.Since(r.base) }

// at converts a time from the monotonic clock to the referee clock.
func (r *recorder) at(t time.Time) time.Duration { return t.Sub(r.base) }

func (r *recorder) newID() int { return int(r.nextID.Add(1)) }

// attempt records one Lock call of kind that took d and failed with err,
// or granted when err is nil.
func (r *recorder) attempt(kind string, err error, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempted[kind]++
	if err == nil {
		r.granted[kind]++
		r.latencies = append(r.latencies, d)
		return
	}
	r.failed[kind]++
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return
	}
	if qe.Refused > qe.Nodes-qe.Quorum {
		r.failedHeld++
	}
	for _, ne := range qe.Errors {
		if errors.Is(ne, redlock.ErrNodeSkipped) {
			r.failedSkipped++
			break
		}
	}
}

func (r *recorder) addGrant(g grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants = append(r.grants, g)
}

// overlapping reports whether the grants recorded so far hold an
// overlap. More grants can only add overlaps, so a true answer stands for
// the whole history.
func (r *recorder) overlapping() bool {
	r.mu.Lock()
	grants := slices.Clone(r.grants)
	r.mu.Unlock()
	return len(overlaps(grants)) > 0
}

func (r *recorder) addRMW(u rmw) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rmws = append(r.rmws, u)
}

func (r *recorder) pause(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pauses++
	r.pauseTime += d
}

func (r *recorder) skip() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped++
}

func (r *recorder) lateCancel(kind string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lateCancels[kind]++
	r.maxCancelDelay[kind] = max(r.maxCancelDelay[kind], d)
}

func (r *recorder) abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned++
}

// unexpected records an error no fault explains, such as a bad argument.
func (r *recorder) unexpected(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unexpect = append(r.unexpect, msg)
}

// fencedStore is the protected resource of the fenced holders: per
// resource it accepts a write whose token is at least the highest it has
// accepted, and logs every decision in order.
type fencedStore struct {
	mu      sync.Mutex
	highest map[string]uint64
	log     []write
}

// offer decides on one write and reports whether it was accepted.
func (s *fencedStore) offer(resource string, token uint64, grantID int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := token >= s.highest[resource]
	if ok {
		s.highest[resource] = token
	}
	s.log = append(s.log, write{Grant: grantID, Resource: resource, Token: token, Accepted: ok})
	return ok
}

// counters holds one counter per resource that holders update with a
// separate read and write, so that two holders at once can lose an update.
type counters struct {
	mu        sync.Mutex
	values    map[string]*atomic.Int64
	completed map[string]int64
}

func (c *counters) counter(resource string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[resource]
	if !ok {
		v = new(atomic.Int64)
		c.values[resource] = v
	}
	return v
}

// increment reads the counter, yields for gap, and writes the value read
// plus one.
func (c *counters) increment(resource string, gap time.Duration) {
	v := c.counter(resource)
	read := v.Load()
	time.Sleep(gap)
	v.Store(read + 1)
	c.mu.Lock()
	c.completed[resource]++
	c.mu.Unlock()
}

// snapshot returns the completed increments and the counters' values.
func (c *counters) snapshot() (completed, final map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	completed, final = map[string]int64{}, map[string]int64{}
	for r, n := range c.completed {
		completed[r] = n
	}
	for r, v := range c.values {
		final[r] = v.Load()
	}
	return completed, final
}
