package redislock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Lock is a lock obtained by a Client on one or more keys. Its methods are
// safe for concurrent use. The embedded Client is the one that obtained
// it.
type Lock struct {
	*Client
	keys     []string
	value    string
	tokenLen int
	ttl      atomic.Int64 // of the last Obtain or Refresh; bounds Release
}

// Key returns the lock's Redis key; for a lock over several keys, the
// first of them. It returns "" for a nil Lock.
func (l *Lock) Key() string {
	if l == nil || len(l.keys) == 0 {
		return ""
	}
	return l.keys[0]
}

// Keys returns the lock's Redis keys, in the order given to ObtainMulti.
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.keys...)
}

// Token returns the lock's token: Options.Token, or the random token
// Obtain made. Obtain with Options.Token set to it takes the lock again
// while it is held, from any process.
func (l *Lock) Token() string {
	if l == nil {
		return ""
	}
	return l.value[:l.tokenLen]
}

// Metadata returns the Options.Metadata the lock was obtained with.
func (l *Lock) Metadata() string {
	if l == nil {
		return ""
	}
	return l.value[l.tokenLen:]
}

// TTL returns how long the lock has left to live according to the server:
// for a lock over several keys, the least of them. It returns 0 when the
// lock is no longer held (it expired, was released or taken over), and
// ErrLockNotHeld for a nil Lock or one not made by Obtain.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l == nil || len(l.keys) == 0 {
		return 0, ErrLockNotHeld
	}
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	reply, err := l.node.Run(ctx, pttlScript, l.keys, []string{l.value})
	if err != nil {
		return 0, err
	}
	ms, ok := reply.(int64)
	if !ok {
		return 0, unexpected(reply)
	}
	if ms <= 0 {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Refresh gives the lock a new ttl, which must be at least 1ms, if it is
// still held; a key that has expired is never created again. It returns
// ErrNotObtained when the lock is no longer held on every key (no key is
// then touched), and for a nil Lock or one not made by Obtain.
//
// After an error of the server or the connection, Refresh tries again as
// opt's RetryStrategy says (by default it does not), within ctx or, when
// ctx has no deadline, within ttl; once the tries end it returns the last
// error, joined with ctx.Err() when ctx ended them. opt's Token and
// Metadata are not used.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration, opt *Options) error {
	if l == nil || len(l.keys) == 0 {
		return ErrNotObtained
	}
	if err := l.check(ctx); err != nil {
		return err
	}
	ttlArg, err := ttlArgument(ttl)
	if err != nil {
		return err
	}
	args := []string{l.value, ttlArg}
	err = withRetry(ctx, ttl, opt.getRetryStrategy(), func(ctx context.Context) (bool, error) {
		reply, err := l.node.Run(ctx, scripts.Extend, l.keys, args)
		switch {
		case err != nil:
			return false, err
		case reply == int64(1):
			return true, nil
		case reply == int64(0):
			// Lost for good: retrying cannot bring it back.
			return true, ErrNotObtained
		}
		return true, unexpected(reply)
	})
	if err == nil {
		l.ttl.Store(int64(ttl))
	}
	return err
}

// Release deletes the lock's keys that still hold its value. It returns
// nil when every key did, and ErrLockNotHeld otherwise: the lock expired,
// was released already, or was taken over (another owner's key is left
// alone), or the Lock is nil or was not made by Obtain.
//
// Release does not stop when ctx is cancelled or its deadline passes: a
// caller giving up still releases its lock. It is bounded instead by the
// lock's TTL, as of the last Obtain or Refresh, after which the server
// would have let the keys expire anyway.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil || len(l.keys) == 0 {
		return ErrLockNotHeld
	}
	if err := l.check(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(l.ttl.Load()))
	defer cancel()
	reply, err := l.node.Run(ctx, releaseScript, l.keys, []string{l.value})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.Join(ErrLockNotHeld, err)
		}
		return err
	}
	if reply != int64(len(l.keys)) {
		return ErrLockNotHeld
	}
	return nil
}
