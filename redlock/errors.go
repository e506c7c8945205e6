package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
)

// Sentinel errors. Match them with errors.Is: the errors locksmith returns
// wrap them with details.
var (
	// ErrNotAcquired is matched by the error of a Lock or TryLock call that
	// did not get the lock: the nodes were held by another owner,
	// unreachable or too slow, and the retry budget or the caller's
	// context ran out.
	ErrNotAcquired = errors.New("redlock: lock not acquired")

	// ErrNotHeld is matched by the error of an Extend, Unlock or Resume
	// that a quorum of nodes did not confirm: the lock expired, was taken
	// over, or too many nodes failed. ErrExpired and ErrReleased match it
	// too.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrExpired is returned by Extend when the lock's validity has
	// already passed on the local monotonic clock; no node is contacted,
	// since the keys may already belong to another owner. Unlock returns
	// it after releasing a lock whose validity had passed before Unlock was
	// called. It matches ErrNotHeld.
	ErrExpired error = &chainedError{"redlock: lock not held: its validity has passed", ErrNotHeld}

	// ErrReleased is returned by Extend after Unlock, and by Unlock after
	// an Unlock that a quorum confirmed. It matches ErrNotHeld.
	ErrReleased error = &chainedError{"redlock: lock not held: already released", ErrNotHeld}

	// ErrLockLost is the cause of the context that Do and KeepAlive hand
	// out when the lock can no longer be guaranteed: a renewal round found
	// the lock gone on too many nodes, or no renewal succeeded before the
	// loss margin. Do also returns it. It matches ErrNotHeld.
	ErrLockLost error = &chainedError{"redlock: lock lost", ErrNotHeld}

	// ErrHoldLimit is the cause of the context that Do and KeepAlive hand
	// out when renewal stops at a bound set by WithMaxHold or
	// WithMaxRenewals. The lock is still held then; Do releases it.
	ErrHoldLimit = errors.New("redlock: hold limit reached")

	// ErrClosed is returned by every call of a Client after
	// [Client.Close], and matched by the error of a Lock call whose wait
	// Close ended. It is the cause of the contexts of KeepAlive and Do
	// that Close ended.
	ErrClosed = errors.New("redlock: client closed")

	// ErrInvalidArgument is matched by every error about a bad argument or
	// option: it is a bug in the caller, never a condition of the nodes.
	ErrInvalidArgument = errors.New("redlock: invalid argument")

	// ErrNodeTimeout is matched by the error of a node that did not reply
	// within the per-node timeout, found inside a NodeError; its message
	// names the timeout ("node timeout 5ms exceeded").
	ErrNodeTimeout = errors.New("redlock: node did not reply within the per-node timeout")

	// ErrNodeSkipped is matched by the error of a node that a lock's
	// requests were not sent to, found inside a NodeError: the lock's
	// acquire was not sent to it, because the node was behind the others
	// or failing (see WithSkipUnhealthyNodes), or because the earlier
	// requests on the keys that the acquire followed there had not
	// returned within the per-node timeout (see the package
	// documentation), and so neither are the lock's extends and releases.
	// Such a node cannot hold the lock: it counts with the refusals when
	// an extend or a renewal decides whether the lock is lost. The
	// error's message says why the node was skipped, and a failing node's
	// last error is in its chain.
	ErrNodeSkipped = errors.New("redlock: node skipped")
)

// chainedError is a sentinel that also matches a more general sentinel.
type chainedError struct {
	msg    string
	parent error
}

func (e *chainedError) Error() string { return e.msg }
func (e *chainedError) Unwrap() error { return e.parent }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// endedError is the error of a call that failed after its context ended:
// err, with the context's error in the chain as well. Its message names the
// context's error once: not again when err already says it, as the errors
// of nodes cut short by the same context do.
type endedError struct {
	err, ctxErr error
}

func withContextError(err, ctxErr error) error {
	return &endedError{err: err, ctxErr: ctxErr}
}

func (e *endedError) Error() string {
	if errors.Is(e.err, e.ctxErr) {
		return e.err.Error()
	}
	return e.err.Error() + ": " + e.ctxErr.Error()
}

func (e *endedError) Unwrap() []error { return []error{e.err, e.ctxErr} }

// Op names the operation of a round of requests, in a [QuorumError] and,
// as a string, in the RoundInfo of an Observer's events.
type Op string

// The operations.
const (
	OpLock   Op = "lock"   // an attempt of a Lock call
	OpExtend Op = "extend" // Extend, Resume or an automatic renewal
	OpUnlock Op = "unlock" // Unlock's release
	// OpProclaim is a Leadership's Proclaim.
	OpProclaim Op = "proclaim"
)

// NodeError is the failure of one node in a round of requests, in the
// Errors of a [QuorumError] as in those of an Observer's RoundInfo.
type NodeError struct {
	// Node is the index of the node in the slice given to New.
	Node int
	// Err is what went wrong: the driver's error, ErrNodeTimeout,
	// ErrNodeSkipped or an unexpected reply.
	Err error
}

// Error returns "node N: " and the node's error.
func (e *NodeError) Error() string {
	if e == nil {
		return "redlock: nil *NodeError"
	}
	return fmt.Sprintf("node %d: %v", e.Node, e.Err)
}

// Unwrap returns e.Err.
func (e *NodeError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// QuorumError describes a round of requests to the nodes that did not
// reach a quorum, or that reached one too late to leave any validity.
//
// It matches ErrNotAcquired when Op is [OpLock] and ErrNotHeld otherwise,
// and each of its NodeErrors is reachable with errors.As.
type QuorumError struct {
	// Op is OpLock, OpExtend, OpUnlock or OpProclaim.
	Op Op
	// Keys are the lock's resource names, as the caller gave them.
	Keys []string
	// Nodes is the number of configured nodes and Quorum how many of them
	// must agree.
	Nodes, Quorum int
	// Granted counts the nodes that did what was asked; Refused counts the
	// nodes that answered that the keys belong to another owner (lock) or
	// no longer hold this lock's value (extend, unlock).
	Granted, Refused int
	// Validity is what was left of the TTL after the round, for lock and
	// extend. A round with Granted >= Quorum fails when it is <= 0.
	Validity time.Duration
	// Attempts is the number of rounds a Lock call made; 1 for TryLock,
	// 0 for extend and unlock.
	Attempts int
	// Errors holds the nodes that failed, in node order. A node in none
	// of Granted, Refused and Errors had not answered when the others
	// decided the round (see the package documentation, Concurrency).
	Errors []*NodeError
}

// Error describes the round: the votes, the remaining validity when it
// ran out, and each node's error. It never shows a lock value.
func (e *QuorumError) Error() string {
	if e == nil {
		return "redlock: nil *QuorumError"
	}
	var b strings.Builder
	switch e.Op {
	case OpLock:
		b.WriteString("redlock: lock not acquired on ")
	default:
		fmt.Fprintf(&b, "redlock: %s not confirmed on ", e.Op)
	}
	fmt.Fprintf(&b, "%s: %d of %d nodes granted, quorum is %d", keytext.QuoteAll(e.Keys), e.Granted, e.Nodes, e.Quorum)
	if e.Granted >= e.Quorum && e.Validity <= 0 {
		fmt.Fprintf(&b, ", but the round left no validity (%v)", e.Validity)
	}
	if e.Refused > 0 {
		fmt.Fprintf(&b, "; %d refused", e.Refused)
	}
	if pending := e.Nodes - e.Granted - e.Refused - len(e.Errors); pending > 0 {
		fmt.Fprintf(&b, "; %d not answered yet", pending)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, "; after %d attempts", e.Attempts)
	}
	for _, ne := range e.Errors {
		fmt.Fprintf(&b, "; %v", ne)
	}
	return b.String()
}

// Unwrap returns the matching sentinel followed by the node errors.
func (e *QuorumError) Unwrap() []error {
	if e == nil {
		return nil
	}
	errs := make([]error, 0, 1+len(e.Errors))
	if e.Op == OpLock {
		errs = append(errs, ErrNotAcquired)
	} else {
		errs = append(errs, ErrNotHeld)
	}
	for _, ne := range e.Errors {
		errs = append(errs, ne)
	}
	return errs
}
