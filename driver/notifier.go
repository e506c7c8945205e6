package driver

import "context"

// A Notifier is a [Conn] that can deliver Redis pub/sub messages. locksmith
// uses it to hear when a lock is released: its release script publishes on a
// channel derived from each key it deletes, and a Lock call waiting for that
// key retries as soon as the message arrives instead of sleeping out its
// retry delay.
//
// When a Conn does not implement Notifier, or Subscribe fails, locksmith
// waits on that node exactly as it does without notifications: it polls
// with the delays of its retry strategy.
//
// # Delivery
//
// Messages are hints, never a source of truth. A Notifier may lose a
// message (for example while it reconnects after a broken connection) and
// locksmith stays correct and live when it does, only slower. It must not
// deliver a message published on one channel to a subscriber of another.
//
// # Sharing
//
// A Notifier is expected to serve all its subscriptions over one pub/sub
// connection to its node, however many channels and subscribers there are,
// rather than one connection per subscriber: locksmith subscribes once per
// waited-for key and node, and many goroutines may wait at once.
//
// # Concurrency
//
// Subscribe and the cancel functions it returns may be called concurrently
// from many goroutines, and several subscribers may subscribe to the same
// channel; each gets every message.
type Notifier interface {
	Conn

	// Subscribe subscribes to channel and calls deliver with the payload
	// of each message published on it, until cancel is called.
	//
	// Subscribe returns once the server has confirmed the subscription,
	// so a message published after Subscribe returns reaches deliver
	// unless it is lost as the package documentation allows; one
	// published earlier may arrive too. When ctx ends first, or the
	// subscription fails, it returns an error (one that matches ctx.Err()
	// when ctx caused it), does not call deliver after returning and
	// leaves nothing to cancel.
	//
	// deliver is called from a goroutine of the Notifier, one message at
	// a time per subscription; it must return quickly and must not call
	// Subscribe or cancel.
	//
	// cancel ends the subscription: once it returns, deliver is not called
	// again. It does not wait for the server and may be called more than
	// once. When the last subscriber of the Notifier cancels, the Notifier
	// ends the goroutines and closes the connection it used for them.
	Subscribe(ctx context.Context, channel string, deliver func(payload string)) (cancel func(), err error)
}
