package driver

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// An Identifier is a [Conn] that can name the node it talks to.
//
// redlock.New rejects two Conns with the same NodeID, because counting one
// node twice would let a minority of real nodes form a quorum.
//
// # NodeID format
//
// The format is shared by every adapter, so that two Conns of different
// adapters to one server (a go-redis client and a rueidis client, say)
// have the same NodeID. An adapter whose client dials one fixed address
// returns [AddrNodeID] of that address; that function is the one
// definition of the format. An adapter that cannot tell which server its
// client reaches (a cluster or Sentinel client, a pool with its own dial
// function) returns [ClientNodeID] of the client value instead: its Go
// type and pointer. Such an ID never equals an address's, and only the
// same client wrapped twice shares it.
//
// When a Conn does not implement Identifier, redlock.New can only reject the
// same Conn value given twice.
type Identifier interface {
	Conn

	// NodeID returns a string that is equal for two Conns when they talk
	// to the same server and the adapters can tell, in the format the
	// type's documentation describes. Databases do not make distinct
	// nodes: the databases of one server fail together, so the database
	// a client selects is no part of the ID. It returns the same ID on
	// every call.
	NodeID() string
}

// A ServerIdentifier is a [Conn] that can tell which server process it
// reached, by an ID the server reports itself. It is for adapters whose
// client does not expose the address it dials (a pool with its own dial
// function), so that their NodeID cannot tell two clients of one server
// apart.
//
// locksmith compares the non-empty ServerIDs of a Client's nodes after the
// acquire round of each lock attempt and after the round of Resume: when
// two nodes report one ID, the call fails with an error matching
// redlock.ErrInvalidArgument, a lock attempt after releasing what its round
// acquired. While a node's ServerID is not known, those rounds wait for
// its reply (up to the per-node timeout) rather than return at a quorum,
// so that the first round through two Conns of one server fails whichever
// answers first, provided each learns its ID during that round. Once every
// such node has an ID and the IDs differ, it stops comparing. When a Conn
// does not implement ServerIdentifier, or its ServerID is known to be "",
// only [Identifier] tells its node from the others.
type ServerIdentifier interface {
	Conn

	// ServerID returns the run_id field of the server's reply to INFO
	// server ([RunID] reads it), which differs for every server process,
	// and whether it is known: known is false while the Conn has not had
	// the answer it reads the ID from. An ID of "" that is known means the
	// server has none (no run_id, or INFO refused). ServerID does no I/O.
	// The Conn reads the ID during its first call that the server
	// answers, before that call returns (unless the call's ctx ends
	// first), and tries again at later calls until it is known. Once
	// known, it returns the same ID on every call, even after the server
	// restarted with a new run_id.
	ServerID() (id string, known bool)
}

// ClientNodeID returns the NodeID, for [Identifier], of a Conn over
// client, a pointer, when the adapter cannot tell which server the client
// reaches: the client's Go type, "@" and its pointer, as fmt's "%T@%p"
// prints them.
func ClientNodeID(client any) string {
	return fmt.Sprintf("%T@%p", client, client)
}

// RunID returns the value of the run_id field in info, the text of a
// server's reply to INFO server, or "" when it has none: the ServerID
// that a [ServerIdentifier] reports.
func RunID(info string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// AddrNodeID returns the NodeID, for [Identifier], of the server that
// listens at addr on network: "tcp" (or "", "tcp4", "tcp6") with addr a
// "host:port" as net.Dial takes it, or "unix" with addr a socket's path.
//
// The ID is "tcp://host:port" or "unix://path", in a canonical form so
// that the names of one server give one ID: host names are lower-cased
// and lose a trailing dot, IPv6 addresses are written in their shortest
// form, a numeric port loses leading zeros, and every name of the local
// host that reaches the same listener is written "localhost": "localhost",
// "127.0.0.1", "::1", an empty host, "0.0.0.0" and "::" (which net.Dial
// takes for the local host). Other loopback addresses, such as 127.0.0.2,
// stay as they are, since another server may listen there. A host name is
// not resolved: two names of one machine other than these give two IDs.
//
// It returns an error for another network, or an addr without a port.
func AddrNodeID(network, addr string) (string, error) {
	switch network {
	case "unix":
		if addr == "" {
			return "", errors.New("driver: empty unix socket path")
		}
		return "unix://" + filepath.Clean(addr), nil
	case "", "tcp", "tcp4", "tcp6":
	default:
		return "", errors.New("driver: NodeID for a network other than tcp or unix")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", errors.New("driver: NodeID for an address that is not host:port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10)
	}
	return "tcp://" + net.JoinHostPort(canonicalHost(host), port), nil
}

// canonicalHost writes host as AddrNodeID documents.
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); ip != nil {
		if ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback) || ip.IsUnspecified() {
			return "localhost"
		}
		return ip.String()
	}
	if host == "" {
		return "localhost"
	}
	return host
}
