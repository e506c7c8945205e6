package goredis_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/driver/goredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// New accepts every kind of go-redis client locksmith documents but a Ring. The failover
// client from redis.NewFailoverClient is a *redis.Client.
var (
	_ redis.Scripter = (*redis.Client)(nil)
	_ redis.Scripter = (*redis.ClusterClient)(nil)
	_ redis.Scripter = redis.UniversalClient(nil)
)

// testServers returns the addresses to test against. server is the Redis
// server LOCKSMITH_REDIS_ADDR names, and cluster a node of the Redis Cluster
// LOCKSMITH_REDIS_CLUSTER_ADDR names, or "" when that is unset. Without
// LOCKSMITH_REDIS_ADDR, both are a fresh in-process miniredis, which also
// answers as a one-node cluster.
func testServers(t *testing.T) (server, cluster string) {
	t.Helper()
	server = os.Getenv("LOCKSMITH_REDIS_ADDR")
	cluster = os.Getenv("LOCKSMITH_REDIS_CLUSTER_ADDR")
	if server == "" {
		server = miniredis.RunT(t).Addr()
		if cluster == "" {
			cluster = server
		}
	}
	return server, cluster
}

func TestConformance(t *testing.T) {
	server, cluster := testServers(t)

	tests := []struct {
		name      string
		addr      string
		newClient func(addr string) redis.UniversalClient
	}{
		{
			name: "Client RESP2",
			addr: server,
			newClient: func(addr string) redis.UniversalClient {
				return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
			},
		},
		{
			name: "Client RESP3",
			addr: server,
			newClient: func(addr string) redis.UniversalClient {
				return redis.NewClient(&redis.Options{Addr: addr, Protocol: 3})
			},
		},
		{
			name: "Client with ContextTimeoutEnabled",
			addr: server,
			newClient: func(addr string) redis.UniversalClient {
				return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
			},
		},
		{
			name: "ClusterClient",
			addr: cluster,
			newClient: func(addr string) redis.UniversalClient {
				return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.addr == "" {
				t.Skip("LOCKSMITH_REDIS_CLUSTER_ADDR is not set")
			}
			drivertest.Run(t, func(t *testing.T) driver.Conn {
				client := tt.newClient(tt.addr)
				t.Cleanup(func() { client.Close() })
				return goredis.New(client)
			})
		})
	}
}

func TestEvalShaKeepsServerError(t *testing.T) {
	server, _ := testServers(t)
	client := redis.NewClient(&redis.Options{Addr: server})
	defer client.Close()
	conn := goredis.New(client)

	const unknownDigest = "0000000000000000000000000000000000000000"
	_, err := conn.EvalSha(context.Background(), unknownDigest, nil, nil)
	if !errors.Is(err, driver.ErrNoScript) {
		t.Fatalf("EvalSha(unknown digest) error = %v, want one matching driver.ErrNoScript", err)
	}
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		t.Errorf("EvalSha(unknown digest) error %q is not a redis.Error; want the server's error kept", err)
	}
}

func TestNodeID(t *testing.T) {
	newClient := func(opt redis.Options) *redis.Client {
		client := redis.NewClient(&opt)
		t.Cleanup(func() { client.Close() })
		return client
	}
	shared := newClient(redis.Options{Addr: "127.0.0.1:6379"})
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:26379"}})
	t.Cleanup(func() { failover.Close() })
	otherFailover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:26379"}})
	t.Cleanup(func() { otherFailover.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:6379"}})
	t.Cleanup(func() { ring.Close() })

	tests := []struct {
		name string
		a, b redis.Scripter
		same bool
	}{
		{"same client twice", shared, shared, true},
		{"two clients, same address", shared, newClient(redis.Options{Addr: "127.0.0.1:6379"}), true},
		// The databases of one server fail together.
		{"two clients, other database", shared, newClient(redis.Options{Addr: "127.0.0.1:6379", DB: 1}), true},
		{"localhost and 127.0.0.1", shared, newClient(redis.Options{Addr: "localhost:6379"}), true},
		{"[::1] and 127.0.0.1", shared, newClient(redis.Options{Addr: "[::1]:6379"}), true},
		{"two clients, other port", shared, newClient(redis.Options{Addr: "127.0.0.1:6380"}), false},
		{"two clients, other host", shared, newClient(redis.Options{Addr: "127.0.0.2:6379"}), false},
		{"unix socket and TCP", shared, newClient(redis.Options{Network: "unix", Addr: "/tmp/redis.sock"}), false},
		{"same failover client twice", failover, failover, true},
		{"two failover clients", failover, otherFailover, false},
		{"failover client and a client of a fixed address", failover, shared, false},
		{"same ring twice", ring, ring, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idA, idB := goredis.New(tt.a).NodeID(), goredis.New(tt.b).NodeID()
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
	tests := []struct {
		name   string
		client redis.Scripter
	}{
		{"nil", nil},
		{"nil *redis.Client", (*redis.Client)(nil)},
		{"nil *redis.ClusterClient", (*redis.ClusterClient)(nil)},
		{"nil *redis.Ring", (*redis.Ring)(nil)},
		{"redis.UniversalClient holding a nil *redis.Client", redis.UniversalClient((*redis.Client)(nil))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if conn := goredis.New(tt.client); conn != nil {
				t.Errorf("New(%#v) = %v, want nil", tt.client, conn)
			}
		})
	}
}

// scripterOnly hides every method of a client but those of redis.Scripter,
// as a caller's own Scripter might.
type scripterOnly struct {
	redis.Scripter
}

// TestConformanceScripterOnly runs the conformance suite through a client
// that has no Do method, which the Conn then drives through Eval and EvalSha.
func TestConformanceScripterOnly(t *testing.T) {
	server, _ := testServers(t)
	drivertest.Run(t, func(t *testing.T) driver.Conn {
		client := redis.NewClient(&redis.Options{Addr: server})
		t.Cleanup(func() { client.Close() })
		return goredis.New(scripterOnly{client})
	}, notifyRulesSkipped()...)
}

// notifyRulesSkipped skips the pub/sub rules for a client without a
// Subscribe method: its Conn refuses every subscription, which
// TestRefusals checks.
func notifyRulesSkipped() []drivertest.Option {
	const reason = "the client has no Subscribe method, so the Conn refuses subscriptions"
	var opts []drivertest.Option
	for _, rule := range []string{"Notify", "NotifyShared", "NotifyCancel", "NotifyContextDone"} {
		opts = append(opts, drivertest.Skip(rule, reason))
	}
	return opts
}

func TestNilConnWait(t *testing.T) {
	var conn *goredis.Conn
	if err := conn.Wait(context.Background()); err != nil {
		t.Errorf("Wait on a nil Conn = %v, want nil", err)
	}
}

// A Conn over a Ring, which shards keys over several servers, refuses every
// call with an error that names the Ring; one over a client that cannot
// subscribe refuses subscriptions, so locksmith polls its node.
func TestRefusals(t *testing.T) {
	server, _ := testServers(t)
	ringClient := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": server}})
	defer ringClient.Close()
	ring := goredis.New(ringClient)
	client := redis.NewClient(&redis.Options{Addr: server})
	defer client.Close()
	checkRefused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "Ring") {
			t.Errorf("%s over a Ring = %v; want an error naming the Ring", what, err)
		}
	}
	_, err := ring.Eval(t.Context(), "return 1", nil, nil)
	checkRefused("Eval", err)
	_, err = ring.EvalSha(t.Context(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", nil, nil)
	checkRefused("EvalSha", err)
	_, err = ring.ScriptLoad(t.Context(), "return 1")
	checkRefused("ScriptLoad", err)
	_, err = ring.Subscribe(t.Context(), "channel", func(string) {})
	checkRefused("Subscribe", err)
	if ring.HonorsDeadline() {
		t.Error("HonorsDeadline over a Ring = true, want false")
	}
	if cancel, err := goredis.New(scripterOnly{client}).Subscribe(t.Context(), "channel", func(string) {}); err == nil {
		cancel()
		t.Error("Subscribe through a client without a Subscribe method succeeded, want an error")
	}
}

// Wait returns once the last subscription has ended and the shared pub/sub
// connection's goroutine with it.
func TestWaitForSubscriptions(t *testing.T) {
	server, _ := testServers(t)
	client := redis.NewClient(&redis.Options{Addr: server})
	defer client.Close()
	conn := goredis.New(client)
	cancel, err := conn.Subscribe(t.Context(), "{wait}:released", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	short, stop := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer stop()
	if err := conn.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait while subscribed = %v, want %v", err, context.DeadlineExceeded)
	}
	cancel()
	if err := conn.Wait(t.Context()); err != nil {
		t.Errorf("Wait after the last cancel = %v, want nil", err)
	}
}

// A Conn that the package's constructors did not make, zero or nil, returns
// errors and panics on no method.
func TestUnmadeConn(t *testing.T) {
	drivertest.RunUnmade(t, new(goredis.Conn), (*goredis.Conn)(nil))
}
