package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// A node's entry in an error says what became of the node in words a user
// can act on: the error that made it fail, when it started failing, or
// whether it ever answered. These errors are built from what
// nodeFailures remembers of each node's requests, so that an error
// reply (NOAUTH, READONLY, OOM) or a refused connection is still named
// when the node's later requests only time out.

// nodeTimeoutError is the error of a node that did not answer within its
// timeout. It matches ErrNodeTimeout and unwraps to the cause it names,
// the driver's error of this request or of the node's earlier ones, never
// to a context's error, which would make the round look like the caller's
// own deadline passed.
type nodeTimeoutError struct {
	timeout time.Duration
	detail  string // what is known of the node, after the timeout
	cause   error  // nil when none is known
}

func (e *nodeTimeoutError) Error() string {
	return fmt.Sprintf("node timeout %v exceeded%s", e.timeout, e.detail)
}

func (e *nodeTimeoutError) Is(target error) bool { return target == ErrNodeTimeout }
func (e *nodeTimeoutError) Unwrap() error        { return e.cause }

// skipError is the error of a node that a round's request was not sent
// to. It matches ErrNodeSkipped and unwraps to the failing node's last
// error, when one is known.
type skipError struct {
	msg   string
	cause error
}

func (e *skipError) Error() string { return e.msg }
func (e *skipError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrNodeSkipped}
	}
	return []error{ErrNodeSkipped, e.cause}
}

// timeoutError returns the error of node's request that had no reply
// within timeout; driverErr is what the request returned, or
// quorum.ErrPending when it was still running.
func (c *Client) timeoutError(node int, timeout time.Duration, driverErr error) *nodeTimeoutError {
	if isCause(driverErr) {
		return &nodeTimeoutError{timeout: timeout, detail: ": " + driverErr.Error(), cause: driverErr}
	}
	fails, since, answered, last := c.fails.of(node)
	switch text, cause := causeOf(last); {
	case cause != nil:
		return &nodeTimeoutError{timeout: timeout, detail: ", " + failingSince(since, fails) + ": " + text, cause: cause}
	case driverErr != nil && driverErr != quorum.ErrPending &&
		!errors.Is(driverErr, context.DeadlineExceeded) && !errors.Is(driverErr, context.Canceled):
		// The client's own timeout, such as "read tcp ...: i/o
		// timeout", which tells a node that was never connected from
		// one that did not reply.
		return &nodeTimeoutError{timeout: timeout, detail: ": " + driverErr.Error()}
	case answered:
		return &nodeTimeoutError{timeout: timeout, detail: ": no reply, though the node answered before"}
	}
	return &nodeTimeoutError{timeout: timeout, detail: ": the node never answered"}
}

// skipError returns the error of node, which a round did not send its
// request to: now says that the round skipped it, rather than an earlier
// round of the lock's (see skipped).
func (c *Client) skipError(node int, now bool) *skipError {
	switch {
	case !now:
		return &skipError{msg: "not sent: the lock was acquired without this node"}
	case c.fails.failed(node):
		fails, since, _, last := c.fails.of(node)
		text, cause := causeOf(last)
		return &skipError{msg: "skipped, " + failingSince(since, fails) + ": " + text, cause: cause}
	}
	switch n := c.health.Stragglers(node); n {
	case 0:
	case 1:
		return &skipError{msg: "skipped, behind the other nodes (1 request still running)"}
	default:
		return &skipError{msg: fmt.Sprintf("skipped, behind the other nodes (%d requests still running)", n)}
	}
	return &skipError{msg: "skipped, behind the other nodes until it answers a probe in time"}
}

// causeOf returns the text that describes err, a node's last error, and
// the cause it names (nil for a timeout that names none).
func causeOf(err error) (text string, cause error) {
	var te *nodeTimeoutError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &te) && te.cause != nil:
		return te.cause.Error(), te.cause
	case te != nil, !isCause(err):
		return err.Error(), nil
	}
	return err.Error(), err
}

// isCause reports whether err, a driver's error, says why a request
// failed, rather than only that its time ran out: a context's error and
// a network timeout ("i/o timeout") are no cause.
func isCause(err error) bool {
	var timeout interface{ Timeout() bool }
	return err != nil && err != quorum.ErrPending && !errors.Is(err, context.Canceled) &&
		!(errors.As(err, &timeout) && timeout.Timeout())
}

// failingSince says since when a node's requests have failed, and how
// many.
func failingSince(since time.Time, fails int) string {
	unit := "failures"
	if fails == 1 {
		unit = "failure"
	}
	return fmt.Sprintf("failing since %s (%d %s)", since.Format("15:04:05.0"), fails, unit)
}
