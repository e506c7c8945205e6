package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// shared holds one Lock from several goroutines at once, as a program that
// hands its Lock around does: the holder keeps it with KeepAlive and uses the
// resource while the KeepAlive context is live and the lock's validity is
// ahead; one or two extenders call Extend at random moments with TTLs from
// half to twice the lock's, now and then two at once; the holder unlocks it
// while the extenders and the renewal may still be running, or leaves it to
// expire.
//
// Its window ends at the earliest of the moment the holders stopped being
// entitled to trust the lock (see trustedUntil), the KeepAlive context seen
// cancelled and the holder starting to release the lock. An abandoned lock
// stays trusted until its last validity.
func (wk *worker) shared(ctx context.Context, resource string, ttl time.Duration) {
	c := wk.plain
	if wk.rng.IntN(2) == 0 {
		c = wk.fenced
	}
	l, g := wk.lock(ctx, c, resource, ttl)
	if l == nil {
		return
	}
	v := &sharedView{now: wk.rec.now, at: wk.rec.at, validUntil: l.ValidUntil, acquired: g.Acquired}
	v.read()
	kctx, stopKeepAlive := l.KeepAlive(ctx)
	type cancellation struct {
		at         time.Duration
		validUntil time.Time // zero once Unlock started
	}
	cancelled := make(chan cancellation, 1)
	stopWatch := context.AfterFunc(kctx, func() {
		cancelled <- cancellation{wk.rec.now(), l.ValidUntil()}
	})

	stopExtenders := make(chan struct{})
	var extenders sync.WaitGroup
	for range 1 + wk.rng.IntN(2) {
		rng := rand.New(rand.NewPCG(wk.rng.Uint64(), wk.rng.Uint64())) // a Rand is not safe for concurrent use
		extenders.Go(func() { wk.extendAtRandom(ctx, l, v, rng, ttl, stopExtenders) })
	}

	until := g.Acquired + ttl/2 + wk.randDur(ttl)
	for wk.rec.now() < until {
		wk.maybePause(ttl)
		if !wk.use(g, func() bool { return kctx.Err() == nil && v.valid(useMargin(ttl)) }) {
			break
		}
		time.Sleep(wk.randDur(wk.w.Hold))
	}

	abandon := wk.rng.Float64() < wk.w.AbandonShare
	stopped := wk.rec.now()
	if !abandon {
		_ = l.Unlock(ctx) // with the extenders and the renewal still running
	}
	close(stopExtenders)
	extenders.Wait()
	watched := stopWatch() // before stopKeepAlive, whose own cancellation ends no window
	stopKeepAlive()
	if abandon {
		wk.rec.abandon()
		v.read() // the validity the lock is left with
		g.End = v.trustedUntil(wk.rec.now())
	} else {
		g.End = min(stopped, v.trustedUntil(stopped))
	}
	if !watched {
		cn := <-cancelled
		lost := errors.Is(context.Cause(kctx), redlock.ErrLockLost) && !cn.validUntil.IsZero()
		if until := wk.rec.at(cn.validUntil); lost && cn.at > until {
			wk.rec.lateCancel(wk.kind, cn.at-until)
		}
		g.End = min(g.End, cn.at)
	}
	wk.rec.addGrant(g)
}

// extendAtRandom extends l with a random TTL at random moments until stop
// is closed or ctx is done, telling v of each call.
func (wk *worker) extendAtRandom(ctx context.Context, l *redlock.Lock, v *sharedView, rng *rand.Rand, ttl time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// About two steps per extender and TTL, as often as the
		// renewal, not so often that their rounds crowd out the other
		// workers' on a loaded machine.
		timer.Reset(time.Duration(rng.Int64N(int64(ttl))))
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if rng.IntN(3) > 0 {
			wk.extend(ctx, l, v, extendTTL(rng, ttl/2, maxExtendTTL(ttl)))
			continue
		}
		// Two Extends at once, one shorter and one longer than ttl,
		// in random order: whichever the nodes apply last sets the
		// keys' TTL, whichever returns last sets ValidUntil.
		ttls := []time.Duration{extendTTL(rng, ttl/2, ttl), extendTTL(rng, ttl, maxExtendTTL(ttl))}
		rng.Shuffle(2, func(i, j int) { ttls[i], ttls[j] = ttls[j], ttls[i] })
		var pair sync.WaitGroup
		for _, d := range ttls {
			pair.Go(func() { wk.extend(ctx, l, v, d) })
		}
		pair.Wait()
	}
}

// extend calls l.Extend(ctx, ttl), telling v of it.
func (wk *worker) extend(ctx context.Context, l *redlock.Lock, v *sharedView, ttl time.Duration) {
	id := v.extending(ttl)
	err := l.Extend(ctx, ttl)
	v.extended(id)
	wk.check(err)
}

// extendTTL returns a random TTL in [lo, hi), in whole milliseconds as the
// nodes keep them.
func extendTTL(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Truncate(time.Millisecond)
}

// maxExtendTTL bounds the TTLs of the Extends of a lock taken for ttl:
// the longest a key of the run can live.
func maxExtendTTL(ttl time.Duration) time.Duration { return 2 * ttl }

// sightingKind says what a sighting records.
type sightingKind int

const (
	// validityRead: ValidUntil, read at At, was Until.
	validityRead sightingKind = iota
	// extendStarted: Extend call Extend, with TTL Until-At, began at At;
	// the keys it reaches may expire from Until on, however late its
	// round is applied.
	extendStarted
	// extendReturned: Extend call Extend returned, and ValidUntil read at
	// At was Until.
	extendReturned
)

// sighting is one thing the goroutines sharing a Lock learned about its
// validity, on the referee clock.
type sighting struct {
	Kind   sightingKind
	At     time.Duration
	Until  time.Duration
	Extend int
}

// trustedUntil returns when the holders of a lock granted at acquired
// stopped being entitled to trust it, given what they learned, in time
// order. At each moment they trust the lock until the latest ValidUntil
// read, and no later than the earliest expiry of an Extend that has begun
// but not yet returned: an Extend may shorten the keys as soon as it
// begins, and only once it returned must ValidUntil tell of it. The window
// ends at the first moment that trust has passed; a later read that
// promises more does not reopen it, and a read that finds the validity
// already passed ends the window at that validity, not at the read (a
// lock granted with its validity gone by the time Lock returned has an
// empty window). When the trust has not passed by the last sighting, the
// result is the trust then held, which may lie beyond it.
//
// So a ValidUntil that outlives the nodes' keys (the later of two
// concurrent Extends overwriting the validity of the one the nodes kept)
// keeps the window open past the keys, and the overlap checker sees the
// next holder inside it; the bookkeeping itself never trusts more than the
// lock reported.
func trustedUntil(acquired time.Duration, seen []sighting) time.Duration {
	if len(seen) == 0 || seen[0].Kind != validityRead {
		return acquired // nothing read: nothing trusted
	}
	var latest time.Duration
	pending := map[int]time.Duration{} // the earliest expiry of each Extend in flight
	trust := func() time.Duration {
		t := latest
		for _, exp := range pending {
			t = min(t, exp)
		}
		return t
	}
	// held is the last sighting at which the holders still trusted the
	// lock on what they had learned before it. The first sighting has
	// nothing before it: a lock whose validity had passed before Lock
	// returned has an empty window.
	held := acquired
	for i, s := range seen {
		if i > 0 {
			t := trust()
			if t <= s.At {
				return max(acquired, held, t)
			}
			held = s.At
		}
		switch s.Kind {
		case validityRead:
			latest = s.Until
		case extendStarted:
			pending[s.Extend] = s.Until
		case extendReturned:
			delete(pending, s.Extend)
			latest = s.Until
		}
	}
	return max(acquired, held, trust())
}

// sharedView collects the sightings of one shared Lock. It is safe for
// concurrent use; each sighting is stamped and, for a read, read under its
// mutex, so that the sightings are in time order.
type sharedView struct {
	now        func() time.Duration
	at         func(time.Time) time.Duration
	validUntil func() time.Time // the Lock's ValidUntil
	acquired   time.Duration

	mu      sync.Mutex
	seen    []sighting
	extends int
}

// read records a read of ValidUntil; v.mu must be held for readLocked.
func (v *sharedView) read() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.readLocked(validityRead, 0)
}

func (v *sharedView) readLocked(kind sightingKind, extend int) time.Duration {
	now := v.now()
	v.seen = append(v.seen, sighting{Kind: kind, At: now, Until: v.at(v.validUntil()), Extend: extend})
	return now
}

// extending records the start of an Extend with ttl and returns its ID for
// extended, which must be called once it returned.
func (v *sharedView) extending(ttl time.Duration) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.extends++
	now := v.now()
	v.seen = append(v.seen, sighting{Kind: extendStarted, At: now, Until: now + ttl, Extend: v.extends})
	return v.extends
}

func (v *sharedView) extended(id int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.readLocked(extendReturned, id)
}

// valid reads ValidUntil and reports whether the lock is trusted for at
// least margin more: the check before each use of the resource.
func (v *sharedView) valid(margin time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.readLocked(validityRead, 0)
	return now+margin < trustedUntil(v.acquired, v.seen)
}

// trustedUntil is trustedUntil over the sightings up to upTo.
func (v *sharedView) trustedUntil(upTo time.Duration) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := len(v.seen)
	for n > 0 && v.seen[n-1].At > upTo {
		n--
	}
	return trustedUntil(v.acquired, v.seen[:n])
}
