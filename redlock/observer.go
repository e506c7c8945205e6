package redlock

import (
	"context"
	"time"
)

// Observer is a set of callbacks that a Client calls as locks are
// acquired, extended, lost and released: for logs, metrics and traces.
// Every field is optional; a nil field costs a nil check and nothing else.
// Give it to a Client with [WithObserver]; [WithLogger] and the
// locksmith/otel module build on it.
//
// Observer is a struct of functions, as net/http/httptrace.ClientTrace is,
// rather than an interface: a user sets only the events wanted, and a new
// event is a new field, which breaks no existing Observer.
//
// # Contract
//
// Callbacks run synchronously on the goroutine doing the work: the one
// calling Lock, Extend or Unlock, or the renewal goroutine of
// [Lock.KeepAlive] and [Client.Do] (LockLost may also come from a timer's
// goroutine, or from one calling Err on the context the renewal handed
// out). They add their run time to the lock path, so they must return
// quickly and never block on I/O; hand slow work to another goroutine.
// Callbacks of one Client may run concurrently for different locks.
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
//	  AttemptStart               before each attempt
//	    NodeError                for each node that failed in the attempt
//	  AttemptDone                after each attempt's round of requests
//	Acquired or NotAcquired      once, when the call returns
//
// For Extend, Resume and each automatic renewal: NodeError for each failed
// node, then Extended or ExtendFailed. For Unlock: NodeError for each
// failed node, then Released. LockLost fires when automatic renewal gives a
// lock up.
type Observer struct {
	// LockStart is called when a Lock call starts. The context it returns
	// is passed to the call's later callbacks (AttemptStart through
	// Acquired or NotAcquired), so that a trace span started here can be
	// ended there; it is never used for I/O. A nil return keeps ctx.
	LockStart func(ctx context.Context, info LockStartInfo) context.Context

	// AttemptStart is called before each attempt of a Lock call.
	AttemptStart func(ctx context.Context, info AttemptStartInfo)

	// AttemptDone is called after each attempt's round of requests, before
	// a failed attempt's keys are released. info.OK tells whether the
	// attempt won the lock.
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

	// NodeError is called for every node that failed in a round of
	// acquire, extend or release requests (the driver's error, a timeout
	// or an unexpected reply), before the round's own event. A refusal is
	// not an error: it is counted in the round's Refused. The release
	// that cleans up after a failed attempt is not reported: its outcome
	// changes nothing for the caller, and keys it misses expire with
	// their TTL.
	NodeError func(ctx context.Context, info NodeErrorInfo)
}

// Names of the operations in RoundInfo.Op and NodeErrorInfo.Op, the same
// as QuorumError.Op.
const (
	OpLock   = "lock"
	OpExtend = "extend"
	OpUnlock = "unlock"
)

// LockStartInfo describes a Lock call that starts.
type LockStartInfo struct {
	Keys  []string      // the resource names, as given
	TTL   time.Duration // the lock's TTL, truncated to milliseconds
	Start time.Time     // when the call started, on the monotonic clock
}

// AttemptStartInfo describes an attempt of a Lock call that starts.
type AttemptStartInfo struct {
	Keys    []string
	Attempt int // 1 for the first attempt
}

// RoundInfo describes a round of requests to every node: an attempt of a
// Lock call, an extend or a release.
type RoundInfo struct {
	Op      string   // OpLock, OpExtend or OpUnlock
	Keys    []string // the resource names
	Value   string   // a short prefix of the lock's value, or ""
	Attempt int      // the attempt of a Lock call, from 1; 0 for the others

	// Nodes is the number of configured nodes and Quorum how many must
	// agree. Granted counts the nodes that did what was asked, Refused
	// those that answered no (the keys are held elsewhere, or no longer
	// hold this lock's value), Errors the nodes that failed.
	Nodes, Quorum, Granted, Refused int
	Errors                          []*NodeError

	Start    time.Time     // when the round started
	Elapsed  time.Duration // how long the round took
	Validity time.Duration // TTL left after the round, less drift; 0 for unlock
	Held     time.Duration // for unlock: time since the lock was acquired or resumed
	OK       bool          // the round reached its quorum in time
}

// AcquiredInfo describes a Lock call that got its lock.
type AcquiredInfo struct {
	Keys       []string
	Value      string        // a short prefix of the lock's value, or ""
	Token      uint64        // the fencing token; 0 without WithFencing
	Attempts   int           // attempts made, from 1
	Start      time.Time     // when the call started
	Elapsed    time.Duration // how long the call took
	ValidUntil time.Time     // as Lock.ValidUntil
}

// NotAcquiredInfo describes a Lock call that returns without a lock.
type NotAcquiredInfo struct {
	Keys     []string
	Attempts int // attempts made; 0 when ctx ended before the first
	Start    time.Time
	Elapsed  time.Duration
	Reason   Reason
	Err      error // the error the call returns
}

// LockLostInfo describes a lock given up by automatic renewal.
type LockLostInfo struct {
	Keys  []string
	Value string // a short prefix of the lock's value, or ""
	Err   error  // the cause, matching ErrLockLost
}

// NodeErrorInfo describes the failure of one node in a round.
type NodeErrorInfo struct {
	Op      string // OpLock, OpExtend or OpUnlock
	Keys    []string
	Attempt int   // the attempt of a Lock call; 0 for the others
	Node    int   // index of the node in the slice given to New
	Err     error // as NodeError.Err
}

// Reason says why a Lock call returned without a lock.
type Reason string

// The reasons of NotAcquiredInfo, checked in this order.
const (
	// ReasonCanceled: the caller's context ended.
	ReasonCanceled Reason = "canceled"
	// ReasonNoValidity: the last attempt had a quorum but took so long
	// that no validity was left.
	ReasonNoValidity Reason = "no_validity"
	// ReasonHeld: in the last attempt at least one node refused because
	// the keys were held by another owner.
	ReasonHeld Reason = "held"
	// ReasonNodeErrors: in the last attempt too many nodes failed, and
	// none refused.
	ReasonNodeErrors Reason = "node_errors"
	// ReasonError: something other than the nodes' answers, such as the
	// value generator, failed.
	ReasonError Reason = "error"
)

// valuePrefixLen is how much of a lock value events show: 4 characters of
// the default 22 are 24 of its 128 bits, enough to tell locks apart in a
// log, far too few to guess the rest.
const valuePrefixLen = 4

// valuePrefix returns the part of a lock value that events may show. A
// value shorter than 16 characters (from WithValueGenerator) is not shown
// at all, since a prefix would give away too much of it.
func valuePrefix(value string) string {
	if len(value) < 16 {
		return ""
	}
	return value[:valuePrefixLen] + "…"
}
