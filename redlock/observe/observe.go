// Package observe defines the events of a lock's life that a
// [github.com/locksmith-go/locksmith/redlock.Client] reports to an
// [Observer]: for logs, metrics and traces. It is to package redlock what
// net/http/httptrace is to net/http: the callbacks and what they are told,
// kept apart so that the lock API stays small.
//
// Give an Observer to a Client with
// [github.com/locksmith-go/locksmith/redlock.WithObserver].
// [github.com/locksmith-go/locksmith/redlock.WithLogger] logs the same
// events with log/slog, and the module github.com/locksmith-go/locksmith/otel
// records them as OpenTelemetry metrics and spans.
package observe

import "context"

// Observer is a set of callbacks that a Client calls as locks are
// acquired, extended, lost and released. Every field is optional; a nil
// field costs a nil check and nothing else.
//
// Observer is a struct of functions, as httptrace.ClientTrace is, rather
// than an interface: a user sets only the events wanted, and a new event is
// a new field, which breaks no existing Observer.
//
// # Contract
//
// Callbacks run synchronously on the goroutine doing the work: the one
// calling Lock, Extend or Unlock, or the renewal goroutine of KeepAlive and
// Do (LockLost may also come from a timer's goroutine, or from one calling
// Err on the context the renewal handed out). They add their run time to
// the lock path, so they must return quickly and never block on I/O; hand
// slow work to another goroutine. Callbacks of one Client may run
// concurrently for different locks.
//
// A panic in a callback is recovered and discarded, so that a callback can
// never interrupt an operation halfway: leave a failed attempt's keys on the
// nodes, lose a granted lock before it reaches the caller, or crash the
// renewal goroutine, where no caller could recover it. A callback that
// wants to know about its own panics must recover them itself.
//
// The info values share slices with the Client (Keys, Errors): read them
// during the call, never modify them, and copy what must outlive it. Lock
// values prove ownership and are never passed in full: the Value fields
// hold at most a short prefix.
//
// # Events
//
// For Lock, TryLock, LockMulti, TryLockMulti and the acquisition of Do and
// DoMulti, in this order:
//
//	LockStart                    once, after the arguments were checked
//	  AttemptDone                after each attempt's round of requests
//	Acquired or NotAcquired      once, when the call returns
//
// For Extend, Resume and each automatic renewal: Extended or ExtendFailed.
// For Unlock: Released. LockLost fires when automatic renewal gives a lock
// up. Each round's [RoundInfo] lists the nodes that failed in it.
type Observer struct {
	// LockStart is called when a Lock call starts. The context it returns
	// is passed to the call's later callbacks (AttemptDone through
	// Acquired or NotAcquired), so that a trace span started here can be
	// ended there; it is never used for I/O. A nil return keeps ctx.
	LockStart func(ctx context.Context, info LockStartInfo) context.Context

	// AttemptDone is called after each attempt's round of requests, before
	// a failed attempt's keys are released. info.OK tells whether the
	// attempt won the lock. The release that cleans up after a failed
	// attempt is not reported: its outcome changes nothing for the caller,
	// and keys it misses expire with their TTL.
	AttemptDone func(ctx context.Context, info RoundInfo)

	// Acquired is called when a Lock call returns a lock.
	Acquired func(ctx context.Context, info AcquiredInfo)

	// NotAcquired is called when a Lock call returns an error after it
	// started (bad arguments are reported without any event).
	NotAcquired func(ctx context.Context, info NotAcquiredInfo)

	// Extended is called after an extend round that a quorum confirmed in
	// time: Lock.Extend, Client.Resume and automatic renewal.
	Extended func(ctx context.Context, info RoundInfo)

	// ExtendFailed is called after an extend round that did not keep the
	// lock: too few nodes confirmed or no validity was left. An Extend
	// refused locally (ErrExpired, ErrReleased) makes no round and no
	// event.
	ExtendFailed func(ctx context.Context, info RoundInfo)

	// LockLost is called when automatic renewal gives the lock up as lost,
	// right after it cancels the context it handed out with info.Err as
	// the cause. ctx is that cancelled context.
	LockLost func(ctx context.Context, info LockLostInfo)

	// Released is called after Unlock's round of release requests;
	// info.OK tells whether a quorum confirmed. An Unlock refused locally
	// (ErrReleased) makes no round and no event.
	Released func(ctx context.Context, info RoundInfo)
}
