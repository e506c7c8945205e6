package driver

// An Identifier is a [Conn] that can name the node it talks to.
//
// redlock.New rejects two Conns with the same NodeID, because counting one
// node twice would let a minority of real nodes form a quorum. Adapters
// derive the ID from the wrapped client (the server's address where the
// client knows it, otherwise the identity of the client value), so wrapping
// one client twice is caught.
//
// When a Conn does not implement Identifier, redlock.New can only reject the
// same Conn value given twice.
type Identifier interface {
	Conn

	// NodeID returns a string that is equal for two Conns when they talk
	// to the same server. Databases do not make distinct nodes: the
	// databases of one server fail together, so the database a client
	// selects is no part of the ID. Where an adapter cannot tell which
	// server a client reaches (a cluster or Sentinel client, a pool with
	// its own dial function), the ID is the identity of the client
	// value, and only the same client wrapped twice shares it.
	NodeID() string
}
