package redsync

import (
	"crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"time"
)

// Defaults of the options, the same as go-redsync/redsync's.
const (
	defaultExpiry        = 8 * time.Second
	defaultTries         = 32
	defaultDriftFactor   = 0.01
	defaultTimeoutFactor = 0.05
	minRetryDelay        = 50 * time.Millisecond
	maxRetryDelay        = 250 * time.Millisecond
)

// A DelayFunc returns how long Lock waits before its attempt number tries
// (1 for the first retry, 2 for the second, ...).
type DelayFunc func(tries int) time.Duration

// An Option configures a mutex. The With* functions make them; an
// OptionFunc turns any function into one.
type Option interface {
	// Apply sets the option on mutex. NewMutex calls it once, before the
	// mutex is used.
	Apply(mutex *Mutex)
}

// OptionFunc is a function that configures a mutex.
type OptionFunc func(mutex *Mutex)

// Apply calls f(mutex).
func (f OptionFunc) Apply(mutex *Mutex) {
	f(mutex)
}

// WithExpiry sets the time to live of the mutex's key, which is also how
// long a lock lasts unless extended. It must be at least 1ms and longer
// than the drift allowance (expiry*driftFactor + 2ms); it is used in whole
// milliseconds. Default: 8s.
func WithExpiry(expiry time.Duration) Option {
	return OptionFunc(func(m *Mutex) { m.expiry = expiry })
}

// WithTries sets how many attempts Lock makes before giving up; it must be
// at least 1. TryLock always makes one. Default: 32.
func WithTries(tries int) Option {
	return OptionFunc(func(m *Mutex) { m.tries = tries })
}

// WithRetryDelay makes Lock wait delay between attempts. Default: a random
// delay in [50ms, 250ms) before each retry.
func WithRetryDelay(delay time.Duration) Option {
	return OptionFunc(func(m *Mutex) {
		m.delayFunc = func(int) time.Duration { return delay }
	})
}

// WithSetNXOnExtend makes Extend take the key again on a node where it no
// longer exists (the node restarted, or the key expired there), instead of
// counting that node as lost. A node where the key holds another owner's
// value still refuses. Default: off, Extend only refreshes a key that holds
// the mutex's value.
//
// This trades safety for availability: once the key has expired on a
// quorum of nodes another process may have locked and released the name in
// between, and Extend then takes the lock without noticing the gap.
func WithSetNXOnExtend() Option {
	return OptionFunc(func(m *Mutex) { m.setNXOnExtend = true })
}

// WithRetryDelayFunc sets the function that chooses the delay before each
// retry of Lock; it must not be nil. Default: a random delay in [50ms,
// 250ms).
func WithRetryDelayFunc(delayFunc DelayFunc) Option {
	return OptionFunc(func(m *Mutex) { m.delayFunc = delayFunc })
}

// WithDriftFactor sets the share of the expiry set aside for clock drift
// between this process and the nodes; 2ms are always added to it. A lock is
// valid until the start of the round that took it plus the expiry, less the
// drift. It must be in [0, 1). Default: 0.01.
func WithDriftFactor(factor float64) Option {
	return OptionFunc(func(m *Mutex) { m.driftFactor = factor })
}

// WithTimeoutFactor sets how long a round of requests to the nodes may take,
// as a share of the expiry: a node that has not answered by then counts as
// failed for that round. It must be in (0, 1) and give at least 1ms.
// Default: 0.05 (400ms with the default expiry).
func WithTimeoutFactor(factor float64) Option {
	return OptionFunc(func(m *Mutex) { m.timeoutFactor = factor })
}

// WithGenValueFunc sets the function that makes the value stored in the
// key, which proves ownership. Lock calls it once per attempt; it must not
// be nil and must return a non-empty value no other owner could produce.
// Default: 16 random bytes from crypto/rand in standard base64, as
// go-redsync/redsync makes them.
func WithGenValueFunc(genValueFunc func() (string, error)) Option {
	return OptionFunc(func(m *Mutex) { m.genValueFunc = genValueFunc })
}

// WithValue sets the mutex's value as if it had taken the lock, so that it
// can Extend, Unlock or check a lock taken elsewhere, by another process or
// by go-redsync/redsync, from that lock's [Mutex.Value]. A later Lock
// replaces it. Default: none.
func WithValue(v string) Option {
	return OptionFunc(func(m *Mutex) { m.value = v })
}

// WithFailFast makes each round of requests return as soon as its outcome
// is known, a quorum of nodes having agreed or so many having refused or
// failed that no quorum is left, instead of waiting for every node. The requests to the remaining nodes carry on in the
// background until they answer or the round's timeout passes. Default:
// false.
func WithFailFast(b bool) Option {
	return OptionFunc(func(m *Mutex) { m.failFast = b })
}

// WithShufflePools makes the mutex contact the nodes in a random order,
// drawn once by NewMutex, so that many mutexes do not all reach the same
// node first. The node numbers in errors follow that order. Default: false.
func WithShufflePools(b bool) Option {
	return OptionFunc(func(m *Mutex) { m.shuffle = b })
}

func defaultDelay(int) time.Duration {
	return minRetryDelay + mrand.N(maxRetryDelay-minRetryDelay)
}

// genValue makes a value in the format go-redsync/redsync uses: 16 bytes
// from crypto/rand in standard, padded base64 (24 characters).
func genValue() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw[:]), nil
}
