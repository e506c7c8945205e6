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

// goroutineID returns the ID of the calling goroutine, as its stack trace
// names it.
func goroutineID(t *testing.T) uint64 {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line, _ = bytes.CutPrefix(line, []byte("goroutine "))
	id, _, _ := bytes.Cut(line, []byte(" "))
	n, err := strconv.ParseUint(string(id), 10, 64)
	if err != nil {
		t.Errorf("reading the goroutine ID from %q: %v", buf[:], err)
	}
	return n
}

// A call whose ctx only its deadline ends runs on the calling goroutine
// when every wait of the pool takes ctx (DialContext, TestOnBorrowContext),
// and in a goroutine of its own when ctx can be cancelled or the pool has a
// Dial or a TestOnBorrow, which take no ctx.
func TestDeadlineOnlyCallRunsOnTheCallingGoroutine(t *testing.T) {
	addr := testServer(t)
	tests := []struct {
		name         string
		deadlineOnly bool
		configure    func(*redis.Pool)
		want         bool
	}{
		{"DialContext, deadline-only ctx", true, nil, true},
		{"DialContext, ctx with cancel", false, nil, false},
		{"Dial, deadline-only ctx", true, func(p *redis.Pool) {
			p.DialContext = nil
			p.Dial = func() (redis.Conn, error) { return redis.Dial("tcp", addr) }
		}, false},
		{"TestOnBorrow, deadline-only ctx", true, func(p *redis.Pool) {
			p.TestOnBorrow = func(redis.Conn, time.Time) error { return nil }
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var borrowedOn uint64
			pool := newPool(t, addr, func(p *redis.Pool) {
				// Called for a pooled connection about to be lent,
				// on the goroutine that runs the call.
				p.TestOnBorrowContext = func(context.Context, redis.Conn, time.Time) error {
					borrowedOn = goroutineID(t)
					return nil
				}
				if tt.configure != nil {
					tt.configure(p)
				}
			})
			conn := waited(t, redigo.New(pool))
			call := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if tt.deadlineOnly {
					ctx, cancel = adapter.WithTimeout(context.Background(), 10*time.Second)
				}
				defer cancel()
				if _, err := conn.Eval(ctx, `return 1`, nil, nil); err != nil {
					t.Fatalf("Eval: %v", err)
				}
			}
			call() // leaves a connection in the pool for the next to borrow
			borrowedOn = 0
			call()
			waitBackground(t, conn) // the call's goroutine, if it had one, has written borrowedOn
			if borrowedOn == 0 {
				t.Fatal("the second call borrowed no pooled connection")
			}
			if got := borrowedOn == goroutineID(t); got != tt.want {
				t.Errorf("ran on the calling goroutine = %v, want %v", got, tt.want)
			}
		})
	}
}
