package redlock

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Leadership is one term of a candidate as the leader of an [Election],
// returned by [Election.Campaign]. It is renewed in the background until
// [Leadership.Resign], until it is lost, or until the Client is closed.
//
// A Leadership is safe for concurrent use.
type Leadership struct {
	election *Election
	lock     *Lock
	ctx      context.Context // of the lock's KeepAlive
	stop     func()          // ends the KeepAlive

	mu       sync.Mutex
	identity string // the last one a quorum confirmed
	seq      int    // of the last proclamation sent
}

// check reports why op cannot run on l.
func (l *Leadership) check(op string) error {
	if l == nil || l.lock == nil {
		return invalidf("%s of a Leadership that no Campaign returned", op)
	}
	return nil
}

// Context returns the context of the leadership: do the leader's work
// under it. It is cancelled, before the leadership's validity ends, as soon
// as the leadership can no longer be guaranteed, with a cause matching
// ErrLockLost; with ErrReleased by Resign and with ErrClosed by Close. Its
// Err also compares the clock with the loss deadline, as the context of
// [Lock.KeepAlive] does; [LockFromContext] returns the leadership's lock.
// For a nil Leadership it returns a context cancelled with a cause
// matching ErrInvalidArgument.
func (l *Leadership) Context() context.Context {
	if err := l.check("Context"); err != nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(err)
		return ctx
	}
	return l.ctx
}

// Term returns the leadership's term: greater than the term of every
// leadership of the election granted before this one's campaign attempt
// started. Pass it to the resource with every write (see Election,
// "Fencing"). It is 0 for a nil Leadership.
func (l *Leadership) Term() uint64 {
	if l.check("Term") != nil {
		return 0
	}
	return l.lock.Token()
}

// Identity returns the identity the leadership publishes: that of
// Campaign, or of the last Proclaim that a quorum confirmed.
func (l *Leadership) Identity() string {
	if l.check("Identity") != nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.identity
}

// ValidUntil returns the time until which the leadership is held, as
// [Lock.ValidUntil] does.
func (l *Leadership) ValidUntil() time.Time {
	if l.check("ValidUntil") != nil {
		return time.Time{}
	}
	return l.lock.ValidUntil()
}

// Proclaim publishes identity in place of the leadership's current one,
// on the nodes that still hold the leadership. It returns nil when a
// quorum of nodes confirmed it within the leadership's validity, and a
// *QuorumError matching ErrNotHeld otherwise; the nodes that applied it
// keep it. It is refused without contacting any node after Resign
// (ErrReleased) or once the validity has passed (ErrExpired). It runs in
// turn with the leadership's renewals. An empty identity is an error
// matching ErrInvalidArgument.
func (l *Leadership) Proclaim(ctx context.Context, identity string) error {
	if err := l.check("Proclaim"); err != nil {
		return err
	}
	if identity == "" {
		return invalidf("empty identity")
	}
	lk, e := l.lock, l.election
	c := lk.client
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.calls.Done()
	if err := lk.takeCallTurn(ctx); err != nil {
		return err
	}
	defer lk.endTurn()
	lk.mu.Lock()
	unlocking, validUntil, req := lk.unlocking, lk.validUntil, lk.req
	lk.mu.Unlock()
	switch {
	case unlocking:
		return ErrReleased
	case !time.Now().Before(validUntil):
		return ErrExpired
	}
	l.mu.Lock()
	l.seq++
	seq := l.seq
	l.mu.Unlock()
	proclaim := roundSpec{
		script: scripts.ElectionProclaim, keys: []string{req.keys[0], e.record},
		args:    []string{lk.value, identity, strconv.FormatUint(lk.token, 10), strconv.Itoa(seq), e.changed},
		timeout: req.nodeTimeout, yes: isOne, every: c.cfg.waitEvery, lanes: lk.lanes,
	}
	v := countVotes(c.round(ctx, proclaim), isOne)
	left := time.Until(lk.ValidUntil())
	if !quorum.Granted(v.granted, len(c.nodes), left) {
		return c.failure(OpProclaim, req, v, left)
	}
	l.mu.Lock()
	l.identity = identity
	l.mu.Unlock()
	return nil
}

// Resign ends the leadership: it stops the renewal, cancels the context
// with ErrReleased, and deletes the lock key and the record on every node
// that holds them, so that a waiting candidate leads at once. It returns
// what [Lock.Unlock] returns: nil when a quorum confirmed, ErrExpired
// after releasing a leadership whose validity had passed (lost, say), a
// *QuorumError matching ErrNotHeld when a quorum did not confirm, in
// which case it may be called again. It is detached from ctx's
// cancellation, and a release that fails on a node is sent again within
// the node timeout: Resign after any error leaves nothing behind on the
// nodes that answer.
func (l *Leadership) Resign(ctx context.Context) error {
	if err := l.check("Resign"); err != nil {
		return err
	}
	err := l.lock.Unlock(ctx)
	l.stop()
	return err
}
