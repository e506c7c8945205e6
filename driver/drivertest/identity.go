package drivertest

import (
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// Identity gives [Run] the Conns that the rules about [driver.Identifier]
// compare with those of newConn. Give it with [WithIdentity]. Each rule
// that needs a hook is skipped when the hook is nil, and every Identifier
// rule is skipped for a Conn that does not implement driver.Identifier.
type Identity struct {
	// Alias returns a Conn, over a client of its own, to the server that
	// newConn's Conns reach, addressed by another of its names: for
	// example "localhost:6379" where newConn dials "127.0.0.1:6379".
	// Needed by NodeIDAlias; leave it nil for an adapter whose NodeID is
	// the identity of the client value, which no other client shares.
	Alias func(t *testing.T) driver.Conn

	// Other returns a Conn to another server than newConn's. Needed by
	// NodeIDOther.
	Other func(t *testing.T) driver.Conn
}

// WithIdentity gives [Run] the hooks of the NodeIDAlias and NodeIDOther
// rules; see [Identity]. Without it those rules are skipped.
func WithIdentity(id Identity) Option {
	return optionFunc(func(c *config) { c.identity = id })
}

// nodeID returns conn's NodeID, skipping the rule when conn is no
// driver.Identifier and failing it when the ID is empty or not stable.
func nodeID(t *testing.T, what string, conn driver.Conn) string {
	t.Helper()
	idf, ok := conn.(driver.Identifier)
	if !ok {
		t.Skipf("%s does not implement driver.Identifier", what)
	}
	id := idf.NodeID()
	if id == "" {
		t.Fatalf("%s: NodeID() = \"\", want a non-empty ID", what)
	}
	if again := idf.NodeID(); again != id {
		t.Fatalf("%s: NodeID() = %q, then %q; want the same ID on every call", what, id, again)
	}
	return id
}

// addressID reports whether id is in the address form of the NodeID
// format, and checks that it is canonical: driver.AddrNodeID of its own
// address gives it back.
func addressID(t *testing.T, what, id string) bool {
	t.Helper()
	network, addr, ok := strings.Cut(id, "://")
	if !ok || (network != "tcp" && network != "unix") {
		return false
	}
	canonical, err := driver.AddrNodeID(network, addr)
	if err != nil || canonical != id {
		t.Errorf("%s: NodeID() = %q, an address ID not made by driver.AddrNodeID (which gives %q, %v)", what, id, canonical, err)
	}
	return true
}

// testNodeID checks that NodeID is non-empty and stable, that an ID in the
// address form is canonical, and that two Conns to one server share an
// address ID: newConn's Conns all talk to the same server.
func testNodeID(t *testing.T, newConn func(t *testing.T) driver.Conn, _ Identity) {
	first := nodeID(t, "a Conn", newConn(t))
	second := nodeID(t, "another Conn to the same server", newConn(t))
	firstAddr := addressID(t, "a Conn", first)
	secondAddr := addressID(t, "another Conn", second)
	if (firstAddr || secondAddr) && first != second {
		t.Errorf("two Conns to one server have NodeIDs %q and %q; want one ID, since at least one is the server's address", first, second)
	}
}

// testNodeIDAlias checks that a Conn to the same server under another of
// its names has the same NodeID.
func testNodeIDAlias(t *testing.T, newConn func(t *testing.T) driver.Conn, id Identity) {
	if id.Alias == nil {
		t.Skip("no Identity.Alias hook given")
	}
	want := nodeID(t, "a Conn", newConn(t))
	got := nodeID(t, "a Conn to the same server by another name", id.Alias(t))
	if got != want {
		t.Errorf("a Conn to the same server by another name has NodeID %q, a Conn of newConn %q; want them equal", got, want)
	}
}

// testNodeIDOther checks that a Conn to another server has another
// NodeID.
func testNodeIDOther(t *testing.T, newConn func(t *testing.T) driver.Conn, id Identity) {
	if id.Other == nil {
		t.Skip("no Identity.Other hook given")
	}
	mine := nodeID(t, "a Conn", newConn(t))
	other := nodeID(t, "a Conn to another server", id.Other(t))
	if other == mine {
		t.Errorf("Conns to two servers share NodeID %q; want two IDs", mine)
	}
}
