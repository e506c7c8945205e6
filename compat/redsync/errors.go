package redsync

import (
	"errors"
	"fmt"
)

// ErrFailed is returned by Lock and TryLock when no attempt got the lock and
// the last one failed without a more specific error, and by Lock, itself
// (as go-redsync/redsync returns it), when the caller's context ends the
// attempts.
var ErrFailed = errors.New("redsync: failed to acquire lock")

// ErrExtendFailed is returned by Extend when a quorum of nodes refreshed
// the key but the round took so long that no validity was left.
var ErrExtendFailed = errors.New("redsync: failed to extend lock")

// ErrLockAlreadyExpired is reported, inside the error of Unlock, for each
// node on which the mutex's key no longer existed: the lock had expired
// there (or was never taken). Match it with errors.Is.
var ErrLockAlreadyExpired = errors.New("redsync: failed to unlock, lock was already expired")

// ErrTaken is returned, as a *ErrTaken, when a quorum of nodes answered that
// the key holds another owner's value. Nodes lists those nodes by their
// index in the mutex's node order.
type ErrTaken struct {
	Nodes []int
}

// Error lists the nodes that hold the key for another owner.
func (err ErrTaken) Error() string {
	return fmt.Sprintf("redsync: lock already taken on nodes %v", err.Nodes)
}

// ErrNodeTaken is reported, as a *ErrNodeTaken inside a joined error, for
// one node that answered that the key holds another owner's value when
// fewer than a quorum did.
type ErrNodeTaken struct {
	Node int
}

// Error names the node that holds the key for another owner.
func (err ErrNodeTaken) Error() string {
	return fmt.Sprintf("redsync: node #%d: lock already taken", err.Node)
}

// A RedisError is the failure of one node to answer a request: a network
// or server error, the end of the caller's context, or the per-node timeout
// (see [WithTimeoutFactor]). It is reported as a *RedisError inside a
// joined error; Err is what the driver.Conn returned.
type RedisError struct {
	Node int
	Err  error
}

// Error names the node and what went wrong with it.
func (e RedisError) Error() string {
	return fmt.Sprintf("redsync: node #%d: %v", e.Node, e.Err)
}

// Unwrap returns e.Err, so errors.Is(err, context.DeadlineExceeded) and the
// like see through a RedisError.
func (e RedisError) Unwrap() error {
	return e.Err
}

// configError reports a Redsync or Mutex that cannot work as configured.
// It is a bug in the caller, so it never matches ErrFailed: retrying cannot
// help.
type configError struct {
	msg string
}

func (e *configError) Error() string { return "redsync: " + e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}
