package conformance

import (
	"errors"
	"net"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// identity returns the drivertest hooks of the NodeID and ServerID rules
// for adapter a over node, with other another server. A redigo pool does
// not tell which server it dials, so its NodeID is the pool's identity and
// it has no alias to compare.
func identity(a adapters.Adapter, node, other *redisnode.Node) drivertest.Identity {
	id := drivertest.Identity{
		Other: func(t *testing.T) driver.Conn { return a.Conn(t, other.Addr()) },
	}
	if a.Name != "redigo" {
		id.Alias = func(t *testing.T) driver.Conn { return a.Conn(t, localhostAlias(t, node.Addr())) }
	}
	return id
}

// localhostAlias returns addr, a loopback IP and port, with the host
// written localhost.
func localhostAlias(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return net.JoinHostPort("localhost", port)
}

// A go-redis and a rueidis client of one server, whichever of its names
// each dials, are one node: they share a NodeID, and redlock.New refuses
// to count them twice.
func TestOneServerThroughTwoAdapters(t *testing.T) {
	node := redisnode.Start(t, 1, redisnode.Config{})[0]
	byName := make(map[string]adapters.Adapter)
	for _, a := range adapters.All() {
		byName[a.Name] = a
	}
	goredisConn := byName["goredis"].Conn(t, node.Addr())
	rueidisConn := byName["rueidis"].Conn(t, localhostAlias(t, node.Addr()))
	idA := goredisConn.(driver.Identifier).NodeID()
	idB := rueidisConn.(driver.Identifier).NodeID()
	if idA != idB {
		t.Errorf("NodeIDs of go-redis (%s) and rueidis (localhost) Conns to one server = %q, %q; want one ID", node.Addr(), idA, idB)
	}
	_, err := redlock.New([]driver.Conn{goredisConn, rueidisConn, byName["redigo"].Conn(t, node.Addr())})
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("redlock.New with one server through go-redis and rueidis = %v, want an error matching ErrInvalidArgument", err)
	}
}

// Two redigo pools of one server pass redlock.New, since a pool does not
// tell which server it dials, but they report one run_id: the first Lock
// fails with an error matching ErrInvalidArgument and leaves no key
// behind. Pools of distinct servers lock.
func TestRedigoPoolsOfOneServer(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	var redigo adapters.Adapter
	for _, a := range adapters.All() {
		if a.Name == "redigo" {
			redigo = a
		}
	}
	tests := []struct {
		name    string
		servers []int // the node each pool dials
		wantErr error
	}{
		{"one server twice", []int{0, 0, 1}, redlock.ErrInvalidArgument},
		{"distinct servers", []int{0, 1, 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conns := make([]driver.Conn, len(tt.servers))
			for i, n := range tt.servers {
				conns[i] = redigo.Conn(t, nodes[n].Addr())
			}
			client := locktest.NewClient(t, conns)
			key := locktest.Key(t)
			lock, err := client.Lock(t.Context(), key, locktest.TTL)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Lock through redigo pools of servers %v = %v, want an error matching %v", tt.servers, err, tt.wantErr)
			}
			if err == nil {
				if err := lock.Unlock(t.Context()); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
			}
			locktest.RequireNoKey(t, nodes, key)
		})
	}
}
