package drivertest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// testContextDoneBeforeCall checks that every method, given a ctx that is
// already cancelled or already past its deadline, returns an error matching
// ctx.Err(). locksmith relies on this to stop an attempt the caller gave up
// on without waiting for any node.
func testContextDoneBeforeCall(t *testing.T, newConn func(t *testing.T) driver.Conn) {
	conn := newConn(t)

	const script = `return 'ran'`
	digest, err := conn.ScriptLoad(t.Context(), script)
	if err != nil {
		t.Fatalf("ScriptLoad error: %v", err)
	}

	contexts := []struct {
		name string
		make func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx, cancel
		}},
		{"deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(t.Context(), time.Now().Add(-time.Hour))
		}},
	}
	calls := []struct {
		method string
		call   func(ctx context.Context) (any, error)
	}{
		{"Eval", func(ctx context.Context) (any, error) {
			return conn.Eval(ctx, script, nil, nil)
		}},
		{"EvalSha", func(ctx context.Context) (any, error) {
			return conn.EvalSha(ctx, digest, nil, nil)
		}},
		{"ScriptLoad", func(ctx context.Context) (any, error) {
			return conn.ScriptLoad(ctx, script)
		}},
	}
	for _, c := range contexts {
		for _, call := range calls {
			t.Run(call.method+" with "+c.name+" context", func(t *testing.T) {
				ctx, cancel := c.make()
				defer cancel()
				got, err := call.call(ctx)
				if !errors.Is(err, ctx.Err()) {
					t.Errorf("%s = %s, %v; want an error matching %v", call.method, describe(got), err, ctx.Err())
				}
			})
		}
	}
}

// BusyScript is a Lua script that keeps a server busy for ARGV[1]
// microseconds by the server's own clock, and for no more than ARGV[2]
// iterations, in case a server's clock stands still while a script runs; see
// [BusyArgs]. Redis runs one script at a time, so it blocks every client of
// the server: keep it short. It serves to end a call's context while the
// server has yet to answer.
const BusyScript = `
local start = redis.call('TIME')
local limit = tonumber(ARGV[1])
for i = 1, tonumber(ARGV[2]) do
  local now = redis.call('TIME')
  if (now[1] - start[1]) * 1000000 + (now[2] - start[2]) >= limit then
    return i
  end
end
return -1`

// BusyArgs returns the ARGV that keep [BusyScript] running for d, and for
// no more than about d on a server whose clock stands still (by an iteration
// count that takes about 1.25µs each on a current machine).
func BusyArgs(d time.Duration) []string {
	return []string{strconv.FormatInt(d.Microseconds(), 10), strconv.FormatInt(max(d.Microseconds()*4/5, 1), 10)}
}

const (
	// busyFor is how long BusyScript keeps the server busy: long
	// enough to outlast ctxLife many times over, short enough not to
	// hold up other users of a shared server.
	busyFor = 50 * time.Millisecond
	// ctxLife is how long a call's ctx lives before it ends, well
	// before the server can answer.
	ctxLife = 5 * time.Millisecond
)

// testContextDoneDuringCall ends a call's ctx while the server is still
// running the script, with a deadline that expires and with an explicit
// cancel, because clients often handle only the first (by a socket
// deadline). A Conn should return then with an error, but locksmith does
// not depend on it, so the call may also return the script's reply once
// the server sends it. The rule fails a Conn whose next call does not get
// its own reply (a connection left with an unread reply and used again),
// and a Conn whose HonorsDeadline reports true that returns the reply to
// the call whose deadline expired.
//
// The server is kept busy by a script that runs for busyFor, which is the
// only way to make a call slow through EVAL alone without leaving anything
// running on the server after the test. The check does not time the call.
func testContextDoneDuringCall(t *testing.T, newConn func(t *testing.T) driver.Conn) {
	conn := newConn(t)

	digest, err := conn.ScriptLoad(t.Context(), BusyScript)
	if err != nil {
		t.Fatalf("ScriptLoad error: %v", err)
	}
	busyArgs := BusyArgs(busyFor)

	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		call     func(ctx context.Context) (any, error)
		deadline bool // the ctx ends by its deadline
	}{
		{
			name:     "Eval with expiring deadline",
			deadline: true,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(t.Context(), ctxLife)
			},
			call: func(ctx context.Context) (any, error) {
				return conn.Eval(ctx, BusyScript, nil, busyArgs)
			},
		},
		{
			name: "EvalSha with cancel",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(ctxLife, cancel)
				return ctx, cancel
			},
			call: func(ctx context.Context) (any, error) {
				return conn.EvalSha(ctx, digest, nil, busyArgs)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			got, err := tt.call(ctx)
			if err == nil && tt.deadline && honorsDeadline(conn) {
				t.Errorf("call = %s, nil; want an error from a Conn that honours deadlines", describe(got))
			}

			// This call waits until the server has finished the busy
			// script, so no test after this one is slowed by it.
			got, err = conn.Eval(t.Context(), `return 'still usable'`, nil, nil)
			if err != nil || !equalReply(got, "still usable") {
				t.Errorf("Eval after the cancelled call = %s, %v; want %q, nil", describe(got), err, "still usable")
			}
		})
	}
}
