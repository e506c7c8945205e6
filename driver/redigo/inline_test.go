package redigo_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/adapter"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

// goroutineID returns the number of the calling goroutine, as its stack
// trace gives it.
func goroutineID(t *testing.T) uint64 {
	t.Helper()
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, ok := bytes.CutPrefix(buf, []byte("goroutine "))
	if ok {
		buf, _, ok = bytes.Cut(buf, []byte(" "))
	}
	id, err := strconv.ParseUint(string(buf), 10, 64)
	if !ok || err != nil {
		t.Fatalf("no goroutine number at the start of the stack trace %q", buf)
	}
	return id
}

// dialContext returns a pool's DialContext to addr that calls dialed
// first.
func dialContext(addr string, dialed func()) func(context.Context) (redis.Conn, error) {
	return func(ctx context.Context) (redis.Conn, error) {
		dialed()
		return redis.DialContext(ctx, "tcp", addr)
	}
}

// A call runs the pool on the calling goroutine only when its ctx only its
// deadline ends and the pool gives that ctx to everything that can wait:
// it dials with DialContext and has no TestOnBorrow. Otherwise it runs in
// a goroutine of its own, which returns when ctx ends whatever the pool
// does.
func TestCallsRunOnTheCallingGoroutine(t *testing.T) {
	addr := testServer(t)
	deadlineOnly := func() (context.Context, context.CancelFunc) {
		return adapter.WithTimeout(context.Background(), time.Minute)
	}
	cancellable := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Minute)
	}
	for _, tc := range []struct {
		name      string
		configure func(p *redis.Pool, dialed func())
		ctx       func() (context.Context, context.CancelFunc)
		inline    bool
	}{
		{"DialContext, deadline-only ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = dialContext(addr, dialed)
		}, deadlineOnly, true},
		{"DialContext and Dial, deadline-only ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = dialContext(addr, dialed)
			p.Dial = func() (redis.Conn, error) {
				t.Error("Dial called beside DialContext")
				return redis.Dial("tcp", addr)
			}
		}, deadlineOnly, true},
		{"DialContext and TestOnBorrowContext, deadline-only ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = dialContext(addr, dialed)
			p.TestOnBorrowContext = func(ctx context.Context, c redis.Conn, _ time.Time) error {
				_, err := redis.DoContext(c, ctx, "PING")
				return err
			}
		}, deadlineOnly, true},
		{"DialContext, cancellable ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = dialContext(addr, dialed)
		}, cancellable, false},
		{"Dial, deadline-only ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = nil
			p.Dial = func() (redis.Conn, error) {
				dialed()
				return redis.Dial("tcp", addr)
			}
		}, deadlineOnly, false},
		{"DialContext and TestOnBorrow, deadline-only ctx", func(p *redis.Pool, dialed func()) {
			p.DialContext = dialContext(addr, dialed)
			p.TestOnBorrow = func(c redis.Conn, _ time.Time) error {
				_, err := c.Do("PING")
				return err
			}
		}, deadlineOnly, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller := goroutineID(t)
			var dialers []uint64 // written before the call that dials returns
			pool := newPool(t, addr, func(p *redis.Pool) {
				tc.configure(p, func() { dialers = append(dialers, goroutineID(t)) })
			})
			conn := waited(t, redigo.New(pool))
			ctx, cancel := tc.ctx()
			defer cancel()
			got, err := conn.Eval(ctx, "return 'ok'", nil, nil)
			if err != nil || got != "ok" {
				t.Fatalf("Eval = %v, %v; want ok, nil", got, err)
			}
			if len(dialers) != 1 {
				t.Fatalf("the pool dialled %d times; want 1", len(dialers))
			}
			if inline := dialers[0] == caller; inline != tc.inline {
				t.Errorf("the pool dialled on the calling goroutine: %v; want %v", inline, tc.inline)
			}
		})
	}
}
