package observe

import "time"

// LockStartInfo describes a Lock call that starts.
type LockStartInfo struct {
	Keys  []string      // the resource names, as given
	TTL   time.Duration // the lock's TTL, truncated to milliseconds
	Start time.Time     // when the call started, on the monotonic clock
}

// RoundInfo describes a round of requests to every node: an attempt of a
// Lock call, an extend or a release.
type RoundInfo struct {
	// Op is the round's operation, as redlock's QuorumError names it:
	// [github.com/locksmith-go/locksmith/redlock.OpLock], OpExtend or
	// OpUnlock, as a string ("lock", "extend", "unlock").
	Op string

	Keys    []string // the resource names
	Value   string   // a short prefix of the lock's value, or ""
	Attempt int      // the attempt of a Lock call, from 1; 0 for the others

	// Nodes is the number of configured nodes and Quorum how many must
	// agree. Granted counts the nodes that did what was asked, Refused
	// those that answered no (the keys are held elsewhere, or no longer
	// hold this lock's value), Errors the nodes that failed (the driver's
	// error, a timeout or an unexpected reply), in node order. Each error
	// is a [*github.com/locksmith-go/locksmith/redlock.NodeError], found
	// with errors.As, that names the node. A round returns once its
	// outcome is decided: a node that had not answered by then counts in
	// none of Granted, Refused and Errors.
	Nodes, Quorum, Granted, Refused int
	Errors                          []error

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
	Err   error  // the cause, matching redlock.ErrLockLost
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
