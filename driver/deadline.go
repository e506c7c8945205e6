package driver

// A DeadlineHonorer is a [Conn] that can say whether its client returns
// from every call by the deadline of the call's ctx, whatever it is doing
// then: waiting for a pooled connection, dialling, retrying, sending or
// reading a reply. Report true only when that holds against a node that
// stalls (accepts connections and never answers); drivertest's
// HonorsDeadline rule checks it.
//
// locksmith bounds every call to a node itself, on a goroutine of its own
// (see Contexts in the package documentation). When HonorsDeadline reports
// true, locksmith may instead run a call on the calling goroutine (a round
// on a single node does), which saves that goroutine. The client need not
// stop at a cancellation of ctx then: a call that the caller cancelled
// fails once the client returns, whatever the node answered, and what it
// may have set is released. Without DeadlineHonorer, or when it reports
// false, every call runs on a goroutine of locksmith's.
type DeadlineHonorer interface {
	Conn

	// HonorsDeadline reports whether every call of the Conn returns by
	// its ctx's deadline. It reports the same on every call and does no
	// I/O.
	HonorsDeadline() bool
}
