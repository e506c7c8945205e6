package rueidis_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A testServer is a Redis server, or a node of a Redis Cluster, to test
// against.
type testServer struct {
	addr string
	// inProcess marks a miniredis, which lacks the client-side caching
	// rueidis turns on by default.
	inProcess bool
}

// options returns client options for s that rueidis can use with it.
func (s testServer) options() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{s.addr}, DisableCache: s.inProcess}
}

// testServers returns the servers to test against. server is the Redis
// server LOCKSMITH_REDIS_ADDR names, and cluster a node of the Redis Cluster
// LOCKSMITH_REDIS_CLUSTER_ADDR names, with an empty addr when that is unset.
// Without LOCKSMITH_REDIS_ADDR, both are a fresh in-process miniredis, which
// also answers as a one-node cluster.
func testServers(t *testing.T) (server, cluster testServer) {
	t.Helper()
	server.addr = os.Getenv("LOCKSMITH_REDIS_ADDR")
	cluster.addr = os.Getenv("LOCKSMITH_REDIS_CLUSTER_ADDR")
	if server.addr == "" {
		server = testServer{addr: miniredis.RunT(t).Addr(), inProcess: true}
		if cluster.addr == "" {
			cluster = server
		}
	}
	return server, cluster
}

// singleServerOptions returns options for a client of s alone: without
// ForceSingleClient, rueidis takes a server that answers the cluster
// commands, as miniredis does, for a cluster.
func singleServerOptions(s testServer) rueidis.ClientOption {
	opt := s.options()
	opt.ForceSingleClient = true
	return opt
}

// newClient returns a client that is closed when t ends.
func newClient(t *testing.T, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// skipWithoutCluster skips t when no cluster is configured.
func skipWithoutCluster(t *testing.T, cluster testServer) {
	t.Helper()
	if cluster.addr == "" {
		t.Skip("LOCKSMITH_REDIS_CLUSTER_ADDR is not set")
	}
}

func TestConformance(t *testing.T) {
	server, cluster := testServers(t)
	resp2 := singleServerOptions(server)
	resp2.AlwaysRESP2 = true
	// rueidis caches on the client side only over RESP3.
	resp2.DisableCache = true

	tests := []struct {
		name    string
		opt     rueidis.ClientOption
		cluster bool
	}{
		{name: "RESP3", opt: singleServerOptions(server)},
		{name: "RESP2", opt: resp2},
		{name: "cluster", opt: cluster.options(), cluster: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cluster {
				skipWithoutCluster(t, cluster)
			}
			drivertest.Run(t, func(t *testing.T) driver.Conn {
				client := newClient(t, tt.opt)
				if got, want := client.Mode() == rueidis.ClientModeCluster, tt.cluster; got != want {
					t.Fatalf("client mode = %q; want cluster mode %v", client.Mode(), want)
				}
				return lsrueidis.New(client)
			})
		})
	}
	// A Conn from Open keeps the same contract once its client is built.
	t.Run("Open", func(t *testing.T) {
		drivertest.Run(t, func(t *testing.T) driver.Conn {
			conn, err := lsrueidis.Open(singleServerOptions(server))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(conn.Close)
			return conn
		})
	})
}

func TestEvalShaKeepsServerError(t *testing.T) {
	server, _ := testServers(t)
	conn := lsrueidis.New(newClient(t, singleServerOptions(server)))

	const unknownDigest = "0000000000000000000000000000000000000000"
	_, err := conn.EvalSha(context.Background(), unknownDigest, nil, nil)
	if !errors.Is(err, driver.ErrNoScript) {
		t.Fatalf("EvalSha(unknown digest) error = %v, want one matching driver.ErrNoScript", err)
	}
	var redisErr *rueidis.RedisError
	if !errors.As(err, &redisErr) {
		t.Errorf("EvalSha(unknown digest) error %q is not a *rueidis.RedisError; want the server's error kept", err)
	}
}

// On a cluster client, keys in different hash slots are an error returned
// to the caller, not a panic, and its text starts with CROSSSLOT like the
// server's own error.
func TestClusterKeysInDifferentSlots(t *testing.T) {
	_, cluster := testServers(t)
	skipWithoutCluster(t, cluster)
	conn := lsrueidis.New(newClient(t, cluster.options()))

	keys := []string{"{slot-a}:lock", "{slot-b}:lock"}
	calls := []struct {
		method string
		call   func() (any, error)
	}{
		{"Eval", func() (any, error) {
			return conn.Eval(t.Context(), `return 1`, keys, nil)
		}},
		{"EvalSha", func() (any, error) {
			return conn.EvalSha(t.Context(), "0000000000000000000000000000000000000000", keys, nil)
		}},
	}
	for _, c := range calls {
		got, err := c.call()
		if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
			t.Errorf("%s(keys %q) = %v, %v; want an error starting with %q", c.method, keys, got, err, "CROSSSLOT ")
		}
	}
}

func TestNodeID(t *testing.T) {
	server, _ := testServers(t)
	opt := singleServerOptions(server)
	client, sameAddr := newClient(t, opt), newClient(t, opt)
	_, port, err := net.SplitHostPort(server.addr)
	if err != nil {
		t.Fatal(err)
	}
	byName := opt
	byName.InitAddress = []string{net.JoinHostPort("localhost", port)}
	otherOpt := singleServerOptions(testServer{addr: miniredis.RunT(t).Addr(), inProcess: true})

	tests := []struct {
		name string
		a, b rueidis.Client
		same bool
	}{
		{"same client twice", client, client, true},
		{"two clients, same address", client, sameAddr, true},
		{"localhost and 127.0.0.1", client, newClient(t, byName), true},
		{"two servers", client, newClient(t, otherOpt), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idA, idB := lsrueidis.New(tt.a).NodeID(), lsrueidis.New(tt.b).NodeID()
			if idA == "" || idB == "" {
				t.Fatalf("NodeIDs = %q, %q; want both non-empty", idA, idB)
			}
			if same := idA == idB; same != tt.same {
				t.Errorf("NodeIDs %q and %q: equal = %v, want %v", idA, idB, same, tt.same)
			}
		})
	}
}

func TestNewNilClient(t *testing.T) {
	if conn := lsrueidis.New(nil); conn != nil {
		t.Errorf("New(nil) = %v, want nil", conn)
	}
}

// A Conn that the package's constructors did not make, zero or nil, returns
// errors and panics on no method.
func TestUnmadeConn(t *testing.T) {
	drivertest.RunUnmade(t, new(lsrueidis.Conn), (*lsrueidis.Conn)(nil))
}
