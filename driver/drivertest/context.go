package drivertest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// testContextDoneBeforeCall: locksmith relies on it to stop an attempt the
// caller gave up on without waiting for any node.
func testContextDoneBeforeCall(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	digest, err := conn.ScriptLoad(t.Context(), `return 'answered'`)
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
	for _, c := range contexts {
		for _, call := range calls(conn, digest) {
			t.Run(call.method+" with "+c.name+" context", func(t *testing.T) {
				ctx, cancel := c.make()
				defer cancel()
				got, err := call.run(ctx)
				if !errors.Is(err, ctx.Err()) {
					t.Errorf("%s = %s, %v; want an error matching %v", call.method, describe(got), err, ctx.Err())
				}
			})
		}
	}
}

// busyScript keeps a server busy for ARGV[1] microseconds by the server's
// own clock, and for no more than ARGV[2] iterations, in case a server's
// clock stands still while a script runs. Redis runs one script at a time,
// so it blocks every client of the server: keep it short. It serves to end
// a call's context while the server has yet to answer.
const busyScript = `
local start = redis.call('TIME')
local limit = tonumber(ARGV[1])
for i = 1, tonumber(ARGV[2]) do
  local now = redis.call('TIME')
  if (now[1] - start[1]) * 1000000 + (now[2] - start[2]) >= limit then
    return i
  end
end
return -1`

const (
	// busyFor is how long busyScript keeps the server busy: long enough
	// to outlast ctxLife many times over, short enough not to hold up
	// other users of a shared server.
	busyFor = 50 * time.Millisecond
	// ctxLife is how long a call's ctx lives before it ends, well
	// before the server can answer.
	ctxLife = 5 * time.Millisecond
)

// busyArgs keep busyScript running for busyFor, and for no more than about
// busyFor on a server whose clock stands still (an iteration takes about
// 1.25µs on a current machine).
var busyArgs = []string{strconv.FormatInt(busyFor.Microseconds(), 10), strconv.FormatInt(busyFor.Microseconds()*4/5, 10)}

// testContextDoneDuringCall ends a call's ctx while the server runs
// busyScript, by a deadline and by a cancel, since clients often handle only
// the first (by a socket deadline). The rule fails a Conn whose next call
// does not get its own reply (a connection left with an unread reply and
// used again). It does not time the call.
func testContextDoneDuringCall(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)

	digest, err := conn.ScriptLoad(t.Context(), busyScript)
	if err != nil {
		t.Fatalf("ScriptLoad error: %v", err)
	}

	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		call     func(ctx context.Context) (any, error)
		deadline bool // the ctx ends by its deadline
	}{
		{"Eval with expiring deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), ctxLife)
		}, func(ctx context.Context) (any, error) {
			return conn.Eval(ctx, busyScript, nil, busyArgs)
		}, true},
		{"EvalSha with cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(ctxLife, cancel)
			return ctx, cancel
		}, func(ctx context.Context) (any, error) {
			return conn.EvalSha(ctx, digest, nil, busyArgs)
		}, false},
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
