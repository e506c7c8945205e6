package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// Lock is a lock held on one or more resources. It is valid until
// [Lock.ValidUntil] unless extended; after that the keys may expire on the
// nodes and another owner may acquire them.
//
// A Lock is safe for concurrent use, also while [Lock.KeepAlive] renews
// it. Its extend rounds (Extend calls, renewals, and a Resume of its value
// on the same Client) run one at a time, each after the previous one has
// ended, and ValidUntil never runs ahead of what the nodes may hold: a
// round that may shorten the keys lowers ValidUntil before it is sent, and
// only a round that a quorum confirmed moves it later. No round starts once
// Unlock has been called.
type Lock struct {
	client *Client
	value  string
	token  uint64 // 0 unless the Client fences its locks
	// permit is the semaphore whose slot the lock holds, nil for a lock:
	// its extends keep the semaphore's limit record alive.
	permit *Semaphore
	// elected is the election whose leadership the lock is, nil for a
	// lock: its extends and release keep the leader's record with it.
	elected *Election
	// valueArg is value as the release script's arguments: kept in the
	// Lock, it makes an Unlock build no slice of its own. Its capacity
	// of 1 makes spec's append of a custom script's arguments copy it.
	valueArg [1]string

	// turn holds a token while an extend round of the lock runs, so that
	// rounds never overlap. A channel rather than a mutex, so that a
	// caller waiting for its turn can give up when its ctx ends.
	turn chan struct{}

	// lanes orders the lock's requests on each node, so that a node
	// applies them in the order they were sent even when a round returned
	// before that node answered.
	lanes *quorum.Lanes

	mu         sync.Mutex
	req        request   // of the last round that a quorum confirmed
	acquired   time.Time // start of the round that granted or resumed the lock
	validUntil time.Time // on the monotonic clock; zero once Unlock started
	// ttl is the TTL that validUntil and the renewal points are counted
	// with: req.ttl, or less when an earlier round with a shorter TTL may
	// still be applied late (see uncertain).
	ttl time.Duration
	// uncertain is the shortest TTL sent in a request whose outcome on its
	// node is unknown (a timeout or a lost reply): such a request may
	// still be applied after rounds started later, so no later validity
	// may count on more than it. 0 when there is none.
	uncertain     time.Duration
	unlocking     bool     // Unlock was called
	validAtUnlock bool     // the lock was still valid when Unlock was first called
	released      bool     // an Unlock was confirmed by a quorum
	renewal       *renewal // of the running KeepAlive, nil when none runs
}

// newLock returns a Lock granted by a round that started at start.
func newLock(c *Client, req request, value string, token uint64, start time.Time, lanes *quorum.Lanes) *Lock {
	l := &Lock{client: c, req: req, value: value, valueArg: [1]string{value}, token: token, turn: make(chan struct{}, 1), ttl: req.ttl, lanes: lanes}
	if !start.IsZero() {
		l.acquired = start
		l.validUntil = start.Add(req.ttl - req.drift)
	}
	return l
}

// check reports why op cannot run on l: a nil *Lock, or a Lock that no
// Client returned (its zero value).
func (l *Lock) check(op string) error {
	switch {
	case l == nil:
		return invalidf("%s of a nil *Lock", op)
	case l.client == nil || l.turn == nil:
		return invalidf("%s of a Lock that no Client returned", op)
	}
	return nil
}

// Key returns the resource name the lock was acquired on; for a lock over
// several resources, the first of them.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	names := l.names()
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// Keys returns the resource names the lock holds, in the order given.
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.names()...)
}

// names returns the lock's resource names. Extend replaces l.req while
// other goroutines may read the names, so the read takes l.mu; the slice
// itself is never modified.
func (l *Lock) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.req.names
}

// Value returns the random value stored in the lock's keys. It proves
// ownership: whoever knows it can extend or release the lock (see
// [Client.Resume]), so treat it as a secret.
func (l *Lock) Value() string {
	if l == nil {
		return ""
	}
	return l.value
}

// Token returns the lock's fencing token when the Client was made with
// WithFencing, and 0 otherwise or for a lock taken over with Resume. The
// token stays the same across extensions and renewals.
//
// Pass it with every write to the protected resource, which must reject a
// token lower than the highest it has accepted: then a holder that was
// paused past its validity cannot overwrite the work of the next holder.
func (l *Lock) Token() uint64 {
	if l == nil {
		return 0
	}
	return l.token
}

// ValidUntil returns the time until which the lock is held, on the local
// monotonic clock: the start of the last successful acquire or extend round
// plus the TTL, less the clock-drift allowance, and earlier while a round
// that may shorten the keys is in flight or after one that failed. It
// returns the zero Time once Unlock has been called.
func (l *Lock) ValidUntil() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// TTL returns how long the lock remains valid from now, or 0 when its
// validity has passed or it was released.
func (l *Lock) TTL() time.Duration {
	until := l.ValidUntil()
	if until.IsZero() {
		return 0
	}
	return max(time.Until(until), 0)
}

// Extend resets the lock's TTL to ttl on every node that still holds it
// and moves [Lock.ValidUntil] to the start of this round plus ttl, less the
// drift allowance. A key that has expired on a node is never created again.
// A shorter ttl than before shortens the lock: ValidUntil is lowered before
// any node is contacted, and a running KeepAlive follows the new validity.
//
// Extend is refused without contacting any node when the lock's validity
// has already passed (ErrExpired) or Unlock was called (ErrReleased). It
// waits for an extend round of the lock already in flight (another Extend,
// a renewal) to end, or for ctx; when the Client is closed meanwhile it
// returns ErrClosed. When a quorum does not confirm, it returns
// a *QuorumError matching ErrNotHeld and ValidUntil does not move later.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.check("Extend"); err != nil {
		return err
	}
	if err := l.client.enter(ctx); err != nil {
		return err
	}
	defer l.client.calls.Done()
	req, err := l.client.newRequest(l.names(), ttl)
	if err != nil {
		return err
	}
	if err := l.takeCallTurn(ctx); err != nil {
		return err
	}
	defer l.endTurn()
	l.mu.Lock()
	unlocking, validUntil := l.unlocking, l.validUntil
	l.mu.Unlock()
	switch {
	case unlocking:
		return ErrReleased
	case !time.Now().Before(validUntil):
		return ErrExpired
	}
	return l.extend(ctx, req)
}

// takeTurn waits until no other extend round of l runs and takes the turn.
// It returns ctx.Err() when ctx ends first and errStopped when stop is
// closed first (a nil stop never is).
func (l *Lock) takeTurn(ctx context.Context, stop <-chan struct{}) error {
	select {
	case l.turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
}

// errStopped is returned by takeTurn when renewal was stopped while it
// waited; it never reaches a caller.
var errStopped = errors.New("redlock: renewal stopped")

// takeCallTurn is takeTurn for a call of the Client (Extend, Resume): it
// returns ErrClosed when the Client is closed while the call waits, as a
// Lock call waiting to retry does.
func (l *Lock) takeCallTurn(ctx context.Context) error {
	if err := l.takeTurn(ctx, l.client.closed); err != errStopped {
		return err
	}
	return ErrClosed
}

// endTurn lets the next extend round of l start.
func (l *Lock) endTurn() { <-l.turn }

// extend runs an extend round with the lock's value and updates the
// validity from it. The first round of a Lock that Resume made learns the
// nodes' server IDs, which sameServer compares next (see unknownServers).
// The caller holds the turn.
func (l *Lock) extend(ctx context.Context, req request) error {
	c := l.client
	l.mu.Lock()
	if l.unlocking {
		l.mu.Unlock()
		return ErrReleased
	}
	// Taken under l.mu, after the check: a round that starts at all
	// starts before the release round of an Unlock.
	start := time.Now()
	ttl := req.ttl
	if l.uncertain > 0 {
		ttl = min(ttl, l.uncertain)
	}
	newUntil := start.Add(ttl - req.drift)
	resuming := l.acquired.IsZero() // the first round of Resume: nothing older to keep
	learn := resuming
	if !resuming && newUntil.Before(l.validUntil) {
		// The round may shorten the keys on the nodes it reaches, before
		// it is known whether a quorum confirms: lower the validity first.
		l.setValidity(newUntil, min(l.ttl, ttl))
	}
	l.mu.Unlock()

	extend := c.spec(c.cfg.extend, req, isOne, l.value, req.ttlArg)
	switch {
	case l.permit != nil:
		extend = l.permit.extendSpec(req, l.value)
	case l.elected != nil:
		extend = l.elected.extendSpec(req, l.value)
	}
	extend.lanes, extend.learn = l.lanes, learn
	results := c.round(ctx, extend)
	validity := quorum.Validity(ttl, time.Since(start), req.drift)
	v := countVotes(results, isOne)
	granted := quorum.Granted(v.granted, len(c.nodes), validity)
	c.cfg.obs.extended(ctx, l, req, start, v, validity, granted)

	l.mu.Lock()
	defer l.mu.Unlock()
	if v.uncertain() && (l.uncertain == 0 || req.ttl < l.uncertain) {
		l.uncertain = req.ttl
	}
	switch {
	case l.unlocking:
	case granted:
		l.req = req
		if resuming {
			l.acquired = start
		}
		l.setValidity(newUntil, ttl)
	case quorum.Gone(v.refused+unsent(v.errs), len(c.nodes)) && !resuming:
		// Too many nodes ran the script and found the keys no longer
		// ours, or never got the lock's acquire, for any quorum to hold
		// them: since some moment of this round, another owner may take
		// the lock.
		l.setValidity(earliest(l.validUntil, start), l.ttl)
	}
	if !granted {
		return c.failure(OpExtend, req, v, validity)
	}
	return nil
}

// setValidity sets the lock's validity and the TTL it is counted with, and
// has a running KeepAlive follow them. The caller holds l.mu.
func (l *Lock) setValidity(until time.Time, ttl time.Duration) {
	l.validUntil, l.ttl = until, ttl
	if l.renewal != nil {
		l.renewal.rearm(l.client.cfg.lossDeadline(until, ttl))
	}
}

// Unlock releases the lock on every node: it deletes each key that still
// holds this lock's value. It returns nil when a quorum of nodes confirmed
// that none of the keys holds the value any more, and a *QuorumError
// matching ErrNotHeld otherwise, typically because the lock had expired and
// another owner took a key. When the lock's validity had already passed
// when Unlock was called, it returns ErrExpired after the release even if
// the nodes confirm it: the keys may have belonged to another owner
// meanwhile.
//
// Unlock ends a running KeepAlive at once (its context is cancelled with
// ErrReleased before Unlock contacts any node), and no extend round starts
// after it was called.
//
// Unlock is detached from ctx's cancellation: it runs to the end, each node
// bounded by the per-node timeout, even if ctx is cancelled, so that a
// caller giving up still releases its lock. Calling it again after a
// confirmed Unlock returns ErrReleased without contacting any node; after an
// unconfirmed one it tries the release again. After [Client.Close], which
// releases the lock itself, it returns ErrClosed.
func (l *Lock) Unlock(ctx context.Context) error {
	if err := l.check("Unlock"); err != nil {
		return err
	}
	if err := l.client.enter(ctx); err != nil {
		return err
	}
	defer l.client.calls.Done()
	return l.release(ctx)
}

// release runs Unlock's release round, detached from ctx's cancellation.
func (l *Lock) release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrReleased
	}
	if !l.unlocking {
		l.unlocking = true
		l.validAtUnlock = time.Now().Before(l.validUntil)
		l.validUntil = time.Time{}
	}
	req, acquired, wasValid, r := l.req, l.acquired, l.validAtUnlock, l.renewal
	l.mu.Unlock()
	if r != nil {
		r.cancel(ErrReleased)
	}

	c := l.client
	start := time.Now()
	released := isOne // the count of keys the release script deleted
	if wantReleased := int64(len(req.keys)); wantReleased != 1 {
		released = func(r result) bool { return r.Err == nil && r.Value == wantReleased }
	}
	release := c.spec(c.cfg.release, req, released, l.valueArg[:]...)
	if l.elected != nil {
		release = l.elected.releaseSpec(req, l.value, released)
	}
	release.lanes = l.lanes
	results := c.round(detached(ctx), release)
	v := countVotes(results, released)
	confirmed := v.granted >= quorum.Size(len(c.nodes))
	// The observer hears of a confirmed release of a lock that was still
	// valid: one released after its validity was not held to the end.
	c.cfg.obs.released(ctx, l, req, start, acquired, v, confirmed && wasValid)
	if !confirmed {
		return c.failure(OpUnlock, req, v, 0)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	if !wasValid {
		return ErrExpired
	}
	return nil
}
