package driver

import "context"

// A Waiter is a [Conn] whose calls may leave work running after they
// returned: a call whose ctx ended before the reply came returns at once,
// as Conn requires, while the client's command, or its wait for a
// connection, goes on in the background until the client's own timeouts
// end it. Each adapter's documentation says what that work is and how
// long it may last.
//
// Wait lets a program close the client only once nothing uses it, and a
// test check that no goroutine outlives it. When a Conn does not implement
// Waiter, its calls leave nothing running once they returned, or the
// adapter offers no way to wait for it.
type Waiter interface {
	Conn

	// Wait blocks until every call of the Conn has finished, those left
	// running in the background included, and returns nil; or it returns
	// ctx.Err() when ctx ends first. Calls made while Wait runs are
	// waited for too.
	Wait(ctx context.Context) error
}
