package driver

import "context"

// A Waiter is a [Conn] that runs something after its calls returned, such
// as the connection and goroutines that a [Notifier] keeps for its
// subscriptions until the last one ends.
//
// The redlock Client's Close calls Wait, after it ended its subscriptions,
// so that a program may close its Redis clients once Close returned; users
// never need to call it. When a Conn does not implement Waiter, nothing of
// it runs once its calls and subscriptions have returned.
type Waiter interface {
	Conn

	// Wait blocks until what the Conn runs after its calls returned has
	// finished, and returns nil; or it returns ctx.Err() when ctx ends
	// first.
	Wait(ctx context.Context) error
}
