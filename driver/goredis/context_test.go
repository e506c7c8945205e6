package goredis_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

// silentServer accepts connections and reads from them but never answers,
// like a server stuck in a long script. It returns its address and stops
// when the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(io.Discard, conn) })
		}
	})
	t.Cleanup(func() {
		listener.Close()
		mu.Lock()
		for _, conn := range conns {
			conn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return listener.Addr().String()
}

// A Conn whose HonorsDeadline reports true returns by its ctx's deadline
// from a server that never answers, though the client's ReadTimeout is an
// hour; for the Conn's other clients, the core bounds the call instead.
func TestHonorsDeadline(t *testing.T) {
	newClient := func(opt redis.Options) *redis.Client {
		client := redis.NewClient(&opt)
		t.Cleanup(func() { client.Close() })
		return client
	}
	failover := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "m", SentinelAddrs: []string{"127.0.0.1:26379"}, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { failover.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cluster.Close() })

	const addr = "127.0.0.1:6379"
	tests := []struct {
		name   string
		client redis.Scripter
		want   bool
	}{
		{"default options", newClient(redis.Options{Addr: addr}), false},
		{"ContextTimeoutEnabled", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true}), true},
		{"ContextTimeoutEnabled, no read or write timeout", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1}), true},
		{"ContextTimeoutEnabled, read deadlines off", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -2}), false},
		{"ContextTimeoutEnabled, write deadlines off", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, WriteTimeout: -2}), false},
		{"failover client with ContextTimeoutEnabled", failover, true},
		{"ring with ContextTimeoutEnabled", ring, false},
		{"cluster client with ContextTimeoutEnabled", cluster, false},
	}
	for _, tt := range tests {
		if got := goredis.New(tt.client).HonorsDeadline(); got != tt.want {
			t.Errorf("New(%s client).HonorsDeadline() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// With ContextTimeoutEnabled, every method returns an error by its ctx's
// deadline (within a generous second) from a server that never answers,
// though the client's ReadTimeout and WriteTimeout are an hour.
func TestCallEndsAtDeadline(t *testing.T) {
	client := redis.NewClient(&redis.Options{
		Addr:                  silentServer(t),
		Protocol:              2, // no HELLO when connecting: the command itself waits
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		ReadTimeout:           time.Hour,
		WriteTimeout:          time.Hour,
		MaxRetries:            -1,
	})
	defer client.Close()
	conn := goredis.New(client)
	if !conn.HonorsDeadline() {
		t.Fatal("HonorsDeadline() = false, want true")
	}

	calls := []struct {
		name string
		call func(ctx context.Context) (any, error)
	}{
		{"Eval", func(ctx context.Context) (any, error) {
			return conn.Eval(ctx, "return 1", []string{"k"}, []string{"v"})
		}},
		{"EvalSha", func(ctx context.Context) (any, error) {
			return conn.EvalSha(ctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", []string{"k"}, []string{"v"})
		}},
		{"ScriptLoad", func(ctx context.Context) (any, error) {
			return conn.ScriptLoad(ctx, "return 1")
		}},
	}
	const life, slack = 50 * time.Millisecond, time.Second
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), life)
		start := time.Now()
		got, err := c.call(ctx)
		took := time.Since(start)
		cancel()
		if err == nil {
			t.Errorf("%s to a silent server = %v, nil; want an error", c.name, got)
		}
		if took > life+slack {
			t.Errorf("%s to a silent server returned after %v; want by its ctx's deadline (%v), give or take %v", c.name, took, life, slack)
		}
	}
}

// TestLockWithSilentNode: with ContextTimeoutEnabled, a node that never
// answers ends at redlock's per-node timeout rather than at the client's
// hour-long ReadTimeout, so the two answering nodes grant and release the
// lock, and nothing is left running (goleak in TestMain).
func TestLockWithSilentNode(t *testing.T) {
	addrs := []string{miniredis.RunT(t).Addr(), miniredis.RunT(t).Addr(), silentServer(t)}
	var conns []driver.Conn
	for _, addr := range addrs {
		client := redis.NewClient(&redis.Options{
			Addr:                  addr,
			Protocol:              2,
			DisableIdentity:       true,
			ContextTimeoutEnabled: true,
			ReadTimeout:           time.Hour,
			WriteTimeout:          time.Hour,
			MaxRetries:            -1,
		})
		t.Cleanup(func() { client.Close() })
		conns = append(conns, goredis.New(client))
	}
	locker, err := redlock.New(conns, redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := locker.TryLock(context.Background(), "resource", 10*time.Second)
	if err != nil {
		t.Fatalf("TryLock with one silent node of three = %v, want the lock", err)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock with one silent node of three = %v, want nil", err)
	}
}
