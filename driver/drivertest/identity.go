package drivertest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// Identity gives [Run] the Conns that the rules about [driver.Identifier]
// and [driver.ServerIdentifier] compare with those of newConn. Give it with
// [WithIdentity]. Each rule that needs a hook is skipped when the hook is
// nil, and every rule of an interface is skipped for a Conn that does not
// implement it.
type Identity struct {
	// Alias returns a Conn, over a client of its own, to the server that
	// newConn's Conns reach, addressed by another of its names: for
	// example "localhost:6379" where newConn dials "127.0.0.1:6379".
	// Needed by NodeIDAlias; leave it nil for an adapter whose NodeID is
	// the identity of the client value, which no other client shares.
	Alias func(t *testing.T) driver.Conn

	// Other returns a Conn to another server than newConn's. Needed by
	// NodeIDOther and ServerIDOther.
	Other func(t *testing.T) driver.Conn
}

// WithIdentity gives [Run] the hooks of the NodeIDAlias, NodeIDOther and
// ServerIDOther rules; see [Identity]. Without it those rules are skipped.
func WithIdentity(id Identity) Option {
	return optionFunc(func(c *config) { c.identity = id })
}

// implementing returns conn as an I, skipping the rule when conn does not
// implement I.
func implementing[I driver.Conn](t *testing.T, what string, conn driver.Conn) I {
	t.Helper()
	i, ok := conn.(I)
	if !ok {
		t.Skipf("%s does not implement %v", what, reflect.TypeFor[I]())
	}
	return i
}

// nodeID returns conn's NodeID, skipping the rule when conn is no
// driver.Identifier and failing it when the ID is empty or not stable.
func nodeID(t *testing.T, what string, conn driver.Conn) string {
	t.Helper()
	idf := implementing[driver.Identifier](t, what, conn)
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

func testNodeID(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	first := nodeID(t, "a Conn", newConn(t))
	second := nodeID(t, "another Conn to the same server", newConn(t))
	firstAddr := addressID(t, "a Conn", first)
	secondAddr := addressID(t, "another Conn", second)
	if (firstAddr || secondAddr) && first != second {
		t.Errorf("two Conns to one server have NodeIDs %q and %q; want one ID, since at least one is the server's address", first, second)
	}
}

func testNodeIDAlias(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	id := cfg.identity
	if id.Alias == nil {
		t.Skip("no Identity.Alias hook given")
	}
	want := nodeID(t, "a Conn", newConn(t))
	got := nodeID(t, "a Conn to the same server by another name", id.Alias(t))
	if got != want {
		t.Errorf("a Conn to the same server by another name has NodeID %q, a Conn of newConn %q; want them equal", got, want)
	}
}

func testNodeIDOther(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	id := cfg.identity
	testOther(t, newConn, id, "NodeID", nodeID)
}

// testOther checks that a Conn of newConn and one of id.Other have
// different IDs, as idOf reads them, when both have one; name names the
// ID.
func testOther(t *testing.T, newConn func(t *testing.T) driver.Conn, id Identity, name string, idOf func(t *testing.T, what string, conn driver.Conn) string) {
	if id.Other == nil {
		t.Skip("no Identity.Other hook given")
	}
	mine := idOf(t, "a Conn", newConn(t))
	other := idOf(t, "a Conn to another server", id.Other(t))
	if mine == "" || other == "" {
		t.Skipf("a server gave no %s", name)
	}
	if other == mine {
		t.Errorf("Conns to two servers share %s %q; want two IDs", name, mine)
	}
}

// runIDScript returns the run_id that the server reports to a script in
// INFO server, or a nil reply when it reports none or refuses INFO.
const runIDScript = `local info = redis.pcall('INFO', 'server')
if type(info) ~= 'string' then return false end
return string.match(info, 'run_id:(%w+)') or false`

// serverID makes a call through conn, so that it has reached its server,
// and returns conn's ServerID, skipping the rule when conn is no
// driver.ServerIdentifier. It fails the rule unless the ID is then known
// and is the run_id that the server reports to a script ("" when it
// reports none), was unknown or the same ID before the call, and stays the
// same.
func serverID(t *testing.T, what string, conn driver.Conn) string {
	t.Helper()
	si := implementing[driver.ServerIdentifier](t, what, conn)
	before, knownBefore := si.ServerID()
	if !knownBefore && before != "" {
		t.Errorf("%s: ServerID() = %q, false before the first call; want \"\" with an unknown ID", what, before)
	}
	reply, err := conn.Eval(t.Context(), runIDScript, nil, nil)
	if err != nil {
		t.Fatalf("%s: Eval of a script that reads the run_id: %v", what, err)
	}
	reported, _ := reply.(string)
	id, known := si.ServerID()
	if id != reported || !known {
		t.Fatalf("%s: ServerID() after a call = %q, %v; want the run_id the server reports, %q, known", what, id, known, reported)
	}
	if knownBefore && before != id {
		t.Errorf("%s: ServerID() = %q before the first call, %q after; want an unknown ID or the same ID", what, before, id)
	}
	if again, known := si.ServerID(); again != id || !known {
		t.Errorf("%s: ServerID() = %q, then %q, %v; want the same known ID on every call", what, id, again, known)
	}
	return id
}

func testServerID(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	first := serverID(t, "a Conn", newConn(t))
	second := serverID(t, "another Conn to the same server", newConn(t))
	if first != second {
		t.Errorf("two Conns to one server have ServerIDs %q and %q; want one ID", first, second)
	}
}

func testServerIDOther(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config) {
	id := cfg.identity
	testOther(t, newConn, id, "ServerID", serverID)
}
