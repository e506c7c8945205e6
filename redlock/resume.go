package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
)

// Resume takes over a lock acquired elsewhere, for example by another
// process, from its key and value ([Lock.Value]). It sets the TTL of the
// keys that still hold value to ttl on every node, exactly as Extend does,
// and returns a Lock valid from that round. The keys are never created: if
// a quorum of nodes no longer holds value, the error matches ErrNotHeld.
// When the round finds two nodes that reach one server (see New), the
// error matches ErrInvalidArgument and the keys keep the TTL it set.
//
// When a Lock that c handed out holds value on key and the program still
// refers to it, Resume extends that Lock, in its turn with its other extend
// rounds, and returns it (ErrReleased once it was unlocked); Resume calls
// of one value that run at once share one Lock the same way: two Locks of
// one value would each believe only their own rounds. Two processes must
// not use one value at once, for the same reason; and Resume of one key of
// a Lock of c over several keys fails with an error matching
// ErrInvalidArgument.
func (c *Client) Resume(ctx context.Context, key, value string, ttl time.Duration) (*Lock, error) {
	return c.resume(ctx, key, value, ttl, nil)
}

// resume is Resume of a plain lock, or with permit of one of its slots,
// whose extends then keep its limit record (see Semaphore.Resume).
func (c *Client) resume(ctx context.Context, key, value string, ttl time.Duration, permit *Semaphore) (*Lock, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	if value == "" {
		return nil, invalidf("empty lock value")
	}
	req, err := c.newRequest([]string{key}, ttl)
	if err != nil {
		return nil, err
	}
	l := c.live.findOrAdd(value, key, func() *Lock {
		l := newLock(c, req, value, 0, time.Time{}, c.order.lanes(req))
		l.permit = permit
		return l
	})
	if l == nil {
		return nil, invalidf("value held by a Lock of this Client on %s among other keys", keytext.Quote(key))
	}
	if err := l.takeCallTurn(ctx); err != nil {
		return nil, err
	}
	defer l.endTurn()
	if err := l.extend(ctx, req); err != nil {
		var qe *QuorumError
		if errors.As(err, &qe) {
			if ce := c.crossSlot(req, qe.Errors); ce != nil {
				return nil, ce
			}
		}
		return nil, err
	}
	if err := c.sameServer(); err != nil {
		return nil, err
	}
	return l, nil
}
