package redigo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/adapter"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

// deadlineOnly returns the context of a locksmith round that lives for d:
// one that only its deadline ends.
func deadlineOnly(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := adapter.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// (A pool's Stats count as active every connection it opened, idle or in
// use.)

// Calls with a deadline-only context run on the connection of the call
// before, kept out of the pool, so the pool's health check, which would
// run for every connection taken from it, does not run for them; Wait
// gives the connection back to the pool.
func TestDeadlineOnlyCallsKeepTheirConnection(t *testing.T) {
	var checks, dials atomic.Int64
	addr := testServer(t)
	pool := newPool(t, addr, func(p *redis.Pool) {
		p.DialContext = func(ctx context.Context) (redis.Conn, error) {
			dials.Add(1)
			return redis.DialContext(ctx, "tcp", addr)
		}
		p.TestOnBorrow = func(redis.Conn, time.Time) error {
			checks.Add(1)
			return nil
		}
	})
	conn := redigo.New(pool)
	const calls = 5
	for i := range calls {
		if got, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return ARGV[1]`, nil, []string{"x"}); err != nil || got != "x" {
			t.Fatalf("Eval %d = %v, %v; want %q, nil", i, got, err, "x")
		}
	}
	if n := checks.Load(); n != 0 {
		t.Errorf("the pool checked a connection %d times for %d calls; want 0, every call after the first on the connection kept", n, calls)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the pool dialled %d times for %d calls; want 1", n, calls)
	}
	if s := pool.Stats(); s.ActiveCount != 1 || s.IdleCount != 0 {
		t.Errorf("pool between calls: %d open, %d idle; want the one connection kept out of it", s.ActiveCount, s.IdleCount)
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.ActiveCount != 1 || s.IdleCount != 1 {
		t.Errorf("pool after Wait: %d open, %d idle; want the connection back in it", s.ActiveCount, s.IdleCount)
	}
}

// The connection kept goes back to the pool once no call used it for a
// while.
func TestKeptConnectionGoesBackWhenUnused(t *testing.T) {
	pool := newPool(t, testServer(t), nil)
	conn := redigo.New(pool)
	if _, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 1`, nil, nil); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.ActiveCount != 1 || s.IdleCount != 0 {
		t.Fatalf("pool after a call: %d open, %d idle; want the connection kept out of it", s.ActiveCount, s.IdleCount)
	}
	deadline := time.Now().Add(hangLimit)
	for pool.Stats().IdleCount != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the kept connection was not back in the pool %v after the call", hangLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A connection whose call failed is not kept: it goes back to the pool,
// which discards it.
func TestConnectionOfAFailedCallIsNotKept(t *testing.T) {
	proxy := newPausableProxy(t, testServer(t))
	pool := newPool(t, proxy.addr(), nil)
	conn := redigo.New(pool)
	if _, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 1`, nil, nil); err != nil {
		t.Fatal(err)
	}
	proxy.pause()
	_, err := conn.Eval(deadlineOnly(t, 20*time.Millisecond), `return 1`, nil, nil)
	proxy.resume()
	if err == nil {
		t.Fatal("Eval through a paused proxy succeeded")
	}
	if s := pool.Stats(); s.ActiveCount != 0 {
		t.Errorf("pool after the failed call: %d open, %d idle; want the connection discarded", s.ActiveCount, s.IdleCount)
	}
	if got, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 2`, nil, nil); err != nil || got != int64(2) {
		t.Errorf("Eval after the failed call = %v, %v; want 2, nil", got, err)
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A pool with as many connections open as its MaxActive allows gets the
// connection back after each call, for its other users.
func TestFullPoolGetsItsConnectionBack(t *testing.T) {
	pool := newPool(t, testServer(t), func(p *redis.Pool) {
		p.MaxActive = 1
		p.Wait = true
	})
	conn := redigo.New(pool)
	for i := range 3 {
		if _, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 1`, nil, nil); err != nil {
			t.Fatalf("Eval %d: %v", i, err)
		}
		if s := pool.Stats(); s.IdleCount != 1 {
			t.Fatalf("after call %d the pool of MaxActive 1 has %d open, %d idle; want its connection back", i, s.ActiveCount, s.IdleCount)
		}
	}
}

// Wait waits for a call that runs on the connection the Conn kept, as for
// any other call.
func TestWaitWaitsForACallOnTheKeptConnection(t *testing.T) {
	proxy := newPausableProxy(t, testServer(t))
	var dials atomic.Int64
	conn := redigo.New(newPool(t, proxy.addr(), func(p *redis.Pool) {
		p.DialContext = func(ctx context.Context) (redis.Conn, error) {
			dials.Add(1)
			return redis.DialContext(ctx, "tcp", proxy.addr())
		}
	}))
	if _, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 1`, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !redigo.HasSpare(conn) {
		t.Fatal("no connection kept after a call with a deadline-only context")
	}
	proxy.pause()
	resumed := false
	defer func() {
		if !resumed {
			proxy.resume()
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := conn.Eval(deadlineOnly(t, hangLimit), `return 2`, nil, nil)
		done <- err
	}()
	// The call has taken the kept connection once the Conn keeps none;
	// should HasSpare hold it at the moment the call looks, the call asks
	// the pool, which dials.
	for redigo.HasSpare(conn) && dials.Load() == 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := conn.Wait(ctx); err == nil {
		t.Error("Wait = nil while a call on the kept connection still waits for its reply; want ctx's error")
	}
	proxy.resume()
	resumed = true
	if err := <-done; err != nil {
		t.Errorf("Eval once the proxy went on = %v, want nil", err)
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
