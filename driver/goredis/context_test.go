package goredis_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
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

// TestInlineCallEndsAtDeadline checks the calls that run on the caller's
// goroutine: with ContextTimeoutEnabled and a context that only its deadline
// ends, as redlock makes for the calls of a round on several nodes, a call to
// a server that never answers must end with an error
// matching context.DeadlineExceeded instead of waiting for the client's
// ReadTimeout.
func TestInlineCallEndsAtDeadline(t *testing.T) {
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
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := adapter.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if !adapter.Inline(ctx) {
				t.Fatal("Inline(adapter.WithTimeout(context.Background())) = false, want true")
			}
			got, err := c.call(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s to a silent server = %v, %v; want an error matching %v", c.name, got, err, context.DeadlineExceeded)
			}
		})
	}
}

// TestCancelledCallReturns checks that with ContextTimeoutEnabled, which
// makes go-redis apply only a deadline, a call whose context is cancelled
// before its deadline still returns at the cancellation.
func TestCancelledCallReturns(t *testing.T) {
	client := redis.NewClient(&redis.Options{
		Addr:                  silentServer(t),
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	defer client.Close()
	conn := goredis.New(client)

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	time.AfterFunc(20*time.Millisecond, cancel)
	got, err := conn.EvalSha(ctx, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", []string{"k"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("EvalSha cancelled while the server is silent = %v, %v; want an error matching %v", got, err, context.Canceled)
	}
}

// TestLockWithSilentNode runs redlock's rounds through the calls that run
// on the caller's goroutine: with a caller context that cannot be cancelled
// and ContextTimeoutEnabled, a node that never answers must end at redlock's
// per-node timeout rather than at the client's hour-long ReadTimeout, so the
// two answering nodes grant and release the lock.
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
