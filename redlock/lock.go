package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// Lock is a lock held on one or more resources. It is valid until
// [Lock.ValidUntil] unless extended; after that the keys may expire on the
// nodes and another owner may acquire them.
//
// A Lock is safe for concurrent use.
type Lock struct {
	client *Client
	req    request
	value  string
	token  uint64 // 0 unless the Client fences its locks

	acquired time.Time // start of the round that granted or resumed the lock

	mu           sync.Mutex
	validUntil   time.Time // on the monotonic clock; zero once Unlock started
	unlocking    bool      // Unlock was called
	released     bool      // an Unlock was confirmed by a quorum
	keepingAlive bool      // a KeepAlive goroutine runs
}

// Key returns the resource name the lock was acquired on; for a lock over
// several resources, the first of them.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.names()[0]
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
// plus the TTL, less the clock-drift allowance. It returns the zero Time
// once Unlock has been called.
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
//
// Extend is refused without contacting any node when the lock's validity
// has already passed (ErrExpired) or Unlock was called (ErrReleased). When a
// quorum does not confirm, it returns a *QuorumError matching ErrNotHeld and
// ValidUntil does not move later.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return invalidf("Extend of a nil *Lock")
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	req, err := l.client.newRequest(l.names(), ttl)
	if err != nil {
		return err
	}
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

// extend runs an extend round with the lock's value and updates the
// validity from it.
func (l *Lock) extend(ctx context.Context, req request) error {
	c := l.client
	start := time.Now()
	results := c.runScript(ctx, c.cfg.extend, req, []string{l.value, req.ttlArg})
	validity := quorum.Validity(req.ttl, time.Since(start), req.drift)
	v := countVotes(results, isOne)
	granted := quorum.Granted(v.granted, len(c.nodes), validity)
	newUntil := start.Add(req.ttl - req.drift)
	c.cfg.obs.extended(ctx, l, req, start, v, validity, granted)

	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.unlocking:
		// Unlock ran meanwhile; its release decides.
	case granted, l.validUntil.IsZero():
		// A successful round, or the first round of Resume, which has
		// nothing older to fall back on.
		l.validUntil = newUntil
		l.req = req
		if l.acquired.IsZero() {
			l.acquired = start
		}
	case newUntil.Before(l.validUntil):
		// The failed round may have shortened the keys on some nodes,
		// so the old validity is only safe up to the new TTL.
		l.validUntil = newUntil
	}
	if !granted {
		return c.failure("extend", req, v, validity)
	}
	return nil
}

// Unlock releases the lock on every node: it deletes each key that still
// holds this lock's value. It returns nil when a quorum of nodes confirmed,
// and a *QuorumError matching ErrNotHeld otherwise, typically because the
// lock had expired.
//
// Unlock is detached from ctx's cancellation: it runs to the end, each node
// bounded by the per-node timeout, even if ctx is cancelled, so that a
// caller giving up still releases its lock. Calling it again after a
// confirmed Unlock returns ErrReleased without contacting any node; after an
// unconfirmed one it tries the release again.
func (l *Lock) Unlock(ctx context.Context) error {
	if l == nil {
		return invalidf("Unlock of a nil *Lock")
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrReleased
	}
	l.unlocking = true
	l.validUntil = time.Time{}
	req, acquired := l.req, l.acquired
	l.mu.Unlock()

	c := l.client
	start := time.Now()
	results := c.runScript(context.WithoutCancel(ctx), c.cfg.release, req, []string{l.value})
	wantDeleted := int64(len(req.keys))
	v := countVotes(results, func(reply any) bool { return reply == wantDeleted })
	confirmed := v.granted >= quorum.Size(len(c.nodes))
	c.cfg.obs.released(ctx, l, req, start, acquired, v, confirmed)
	if !confirmed {
		return c.failure("unlock", req, v, 0)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	return nil
}
