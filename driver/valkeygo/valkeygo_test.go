package valkeygo_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/driver/valkeygo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A testServer is a Redis server, or a node of a Redis Cluster, to test
// against.
type testServer struct {
	addr string
	// inProcess marks a miniredis, which lacks the client-side caching
	// valkey-go turns on by default.
	inProcess bool
}

// options returns options for a client of s alone: without
// ForceSingleClient, valkey-go takes a server that answers the cluster
// commands, as miniredis does, for a cluster.
func (s testServer) options() valkey.ClientOption {
	return valkey.ClientOption{InitAddress: []string{s.addr}, DisableCache: s.inProcess, ForceSingleClient: true}
}

// testServers returns the servers to test against. server is the Redis
// server LOCKSMITH_REDIS_ADDR names, and cluster a node of the Redis Cluster
// LOCKSMITH_REDIS_CLUSTER_ADDR names, with an empty addr when that is unset.
// Without LOCKSMITH_REDIS_ADDR, server is a fresh in-process miniredis.
// The integration module runs drivertest against redis-server processes.
func testServers(t *testing.T) (server, cluster testServer) {
	t.Helper()
	server.addr = os.Getenv("LOCKSMITH_REDIS_ADDR")
	cluster.addr = os.Getenv("LOCKSMITH_REDIS_CLUSTER_ADDR")
	if server.addr == "" {
		server = testServer{addr: miniredis.RunT(t).Addr(), inProcess: true}
	}
	return server, cluster
}

// newClient returns a client that is closed when t ends.
func newClient(t *testing.T, opt valkey.ClientOption) valkey.Client {
	t.Helper()
	client, err := valkey.NewClient(opt)
	if err != nil {
		t.Fatalf("valkey.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

func TestConformance(t *testing.T) {
	server, cluster := testServers(t)
	resp2 := server.options()
	resp2.AlwaysRESP2 = true
	resp2.DisableCache = true // valkey-go caches on the client side only over RESP3
	clusterOpt := valkey.ClientOption{InitAddress: []string{cluster.addr}}

	tests := []struct {
		name string
		opt  valkey.ClientOption
		mode valkey.ClientMode
	}{
		{"RESP3", server.options(), valkey.ClientModeStandalone},
		{"RESP2", resp2, valkey.ClientModeStandalone},
		{"cluster", clusterOpt, valkey.ClientModeCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode == valkey.ClientModeCluster && cluster.addr == "" {
				t.Skip("LOCKSMITH_REDIS_CLUSTER_ADDR is not set")
			}
			drivertest.Run(t, func(t *testing.T) driver.Conn {
				client := newClient(t, tt.opt)
				if got := client.Mode(); got != tt.mode {
					t.Fatalf("client mode = %q, want %q", got, tt.mode)
				}
				return valkeygo.New(client)
			})
		})
	}
}

func TestEvalShaKeepsServerError(t *testing.T) {
	server, _ := testServers(t)
	conn := valkeygo.New(newClient(t, server.options()))

	_, err := conn.EvalSha(t.Context(), "0000000000000000000000000000000000000000", nil, nil)
	if !errors.Is(err, driver.ErrNoScript) {
		t.Fatalf("EvalSha(unknown digest) error = %v, want one matching driver.ErrNoScript", err)
	}
	var valkeyErr *valkey.ValkeyError
	if !errors.As(err, &valkeyErr) {
		t.Errorf("EvalSha(unknown digest) error %q is not a *valkey.ValkeyError; want the server's error kept", err)
	}
}

// On a cluster client, keys in different hash slots are an error returned
// to the caller, not a panic, and its text starts with CROSSSLOT like the
// server's own error.
func TestClusterKeysInDifferentSlots(t *testing.T) {
	_, cluster := testServers(t)
	if cluster.addr == "" {
		t.Skip("LOCKSMITH_REDIS_CLUSTER_ADDR is not set")
	}
	conn := valkeygo.New(newClient(t, valkey.ClientOption{InitAddress: []string{cluster.addr}}))
	keys := []string{"{slot-a}:lock", "{slot-b}:lock"}
	if got, err := conn.Eval(t.Context(), `return 1`, keys, nil); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		t.Errorf("Eval(keys %q) = %v, %v; want an error starting with %q", keys, got, err, "CROSSSLOT ")
	}
	if got, err := conn.EvalSha(t.Context(), "0000000000000000000000000000000000000000", keys, nil); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		t.Errorf("EvalSha(keys %q) = %v, %v; want an error starting with %q", keys, got, err, "CROSSSLOT ")
	}
}

func TestNodeID(t *testing.T) {
	server, _ := testServers(t)
	opt := server.options()
	client := newClient(t, opt)
	_, port, err := net.SplitHostPort(server.addr)
	if err != nil {
		t.Fatal(err)
	}
	byName := opt
	byName.InitAddress = []string{net.JoinHostPort("localhost", port)}
	other := testServer{addr: miniredis.RunT(t).Addr(), inProcess: true}

	tests := []struct {
		name string
		a, b valkey.Client
		same bool
	}{
		{"same client twice", client, client, true},
		{"two clients, same address", client, newClient(t, opt), true},
		{"localhost and 127.0.0.1", client, newClient(t, byName), true},
		{"two servers", client, newClient(t, other.options()), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idA, idB := valkeygo.New(tt.a).NodeID(), valkeygo.New(tt.b).NodeID()
			if idA == "" || idB == "" {
				t.Fatalf("NodeIDs = %q, %q; want both non-empty", idA, idB)
			}
			if same := idA == idB; same != tt.same {
				t.Errorf("NodeIDs %q and %q: equal = %v, want %v", idA, idB, same, tt.same)
			}
		})
	}
}

// With ForceSingleClient, as the package documentation advises for one
// server, valkey.NewClient returns a client while the server is down, and
// the Conn over it fails until the server is up and works from then on.
func TestNodeDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if client == nil {
		t.Fatalf("valkey.NewClient with the server down = nil client, error %v; want a client", err)
	}
	defer client.Close()
	if err == nil {
		t.Fatal("valkey.NewClient with the server down = nil error, want the dial's")
	}
	conn := valkeygo.New(client)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := conn.Eval(ctx, `return 1`, nil, nil); err == nil {
		t.Fatalf("Eval with the server down = %v, nil; want an error", got)
	}

	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(addr); err != nil {
		t.Fatalf("starting the server: %v", err)
	}
	defer server.Close()
	got, err := conn.Eval(ctx, `return 1`, nil, nil)
	if err != nil || got != int64(1) {
		t.Fatalf("Eval once the server is up = %v, %v; want 1, nil", got, err)
	}
}

func TestNewNilClient(t *testing.T) {
	if conn := valkeygo.New(nil); conn != nil {
		t.Errorf("New(nil) = %v, want nil", conn)
	}
}

// A Conn that New did not make, zero or nil, returns errors and panics on
// no method.
func TestUnmadeConn(t *testing.T) {
	drivertest.RunUnmade(t, new(valkeygo.Conn), (*valkeygo.Conn)(nil))
	var conn *valkeygo.Conn
	if err := conn.Wait(t.Context()); err != nil {
		t.Errorf("Wait on a nil Conn = %v, want nil", err)
	}
}
