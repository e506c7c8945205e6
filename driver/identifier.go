package driver

// An Identifier is a [Conn] that can name the node it talks to.
//
// redlock.New rejects two Conns with the same NodeID, because counting one
// node twice would let a minority of real nodes form a quorum. Adapters
// derive the ID from the wrapped client (its address and database where the
// client knows them, otherwise the identity of the client value), so wrapping
// one client twice is caught.
//
// When a Conn does not implement Identifier, redlock.New can only reject the
// same Conn value given twice.
type Identifier interface {
	Conn

	// NodeID returns a string that is equal for two Conns exactly when
	// they talk to the same node through the same client configuration.
	NodeID() string
}
