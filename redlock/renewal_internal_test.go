package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// idleConn is a Conn for tests that make no request.
type idleConn struct{}

func (idleConn) Eval(context.Context, string, []string, []string) (any, error) {
	return nil, errors.New("idleConn: no request expected")
}

func (idleConn) EvalSha(context.Context, string, []string, []string) (any, error) {
	return nil, errors.New("idleConn: no request expected")
}

func (idleConn) ScriptLoad(context.Context, string) (string, error) {
	return "", errors.New("idleConn: no request expected")
}

// heldForTest returns the context KeepAlive would hand out for a lock held
// for another hour, with no renewal goroutine and no timer: only Err can
// end it. lost collects the LockLost events.
func heldForTest(t *testing.T) (_ *heldContext, lost *[]observe.LockLostInfo) {
	t.Helper()
	lost = new([]observe.LockLostInfo)
	c, err := New([]driver.Conn{idleConn{}}, WithObserver(observe.Observer{
		LockLost: func(_ context.Context, info observe.LockLostInfo) { *lost = append(*lost, info) },
	}))
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.newRequest([]string{"k"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := newLock(c, req, "0123456789abcdef0123", 0, time.Time{}, quorum.NewLanes(new(quorum.Order)))
	l.validUntil = time.Now().Add(time.Hour)
	kctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	r := &renewal{l: l, ctx: kctx, cancel: cancel, keys: l.names()}
	return &heldContext{Context: kctx, lock: l, r: r}, lost
}

// A process starved of CPU runs its timers late; Err must report a lock
// past its loss margin without waiting for them.
func TestHeldContextErrReportsThePassedDeadline(t *testing.T) {
	ctx, lost := heldForTest(t)
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err of a lock valid for an hour = %v", err)
	}
	l := ctx.lock
	l.mu.Lock()
	// The loss deadline (validity less the loss margin) is now.
	l.validUntil = time.Now().Add(share(l.req.ttl, l.client.cfg.lossMargin))
	l.mu.Unlock()

	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the loss deadline = %v, want context.Canceled", err)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, ErrLockLost) {
		t.Errorf("cause = %v, want ErrLockLost", cause)
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("Done is not closed after Err reported the loss")
	}
	_ = ctx.Err()
	if len(*lost) != 1 {
		t.Fatalf("LockLost reported %d times, want once", len(*lost))
	}
	if got := (*lost)[0]; !errors.Is(got.Err, ErrLockLost) || len(got.Keys) != 1 || got.Keys[0] != "k" {
		t.Errorf("LockLost info = %+v", got)
	}
	// The loss timer firing late must not report it again.
	ctx.r.lost(ctx.r.lossCause())
	if len(*lost) != 1 {
		t.Errorf("LockLost reported %d times after the late timer, want once", len(*lost))
	}
}

func TestHeldContextErrReportsUnlock(t *testing.T) {
	ctx, lost := heldForTest(t)
	l := ctx.lock
	l.mu.Lock()
	l.unlocking, l.validUntil = true, time.Time{}
	l.mu.Unlock()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after Unlock started = %v, want context.Canceled", err)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, ErrReleased) {
		t.Errorf("cause = %v, want ErrReleased", cause)
	}
	if len(*lost) != 0 {
		t.Errorf("an unlocked lock was reported lost: %+v", *lost)
	}
}

// What KeepAlive documents for contexts derived from the one it returns,
// with the loss timer late (heldForTest has none): one made with
// context.WithValue reads the clock through it; one made with
// context.WithTimeout does not, and learns of the loss once the returned
// context is cancelled, with the same cause.
func TestDerivedContextsAndTheLossDeadline(t *testing.T) {
	type ctxKey struct{}
	for _, check := range []string{"held", "value"} {
		t.Run("checked="+check, func(t *testing.T) {
			ctx, _ := heldForTest(t)
			withTimeout, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			withValue := context.WithValue(ctx, ctxKey{}, 1)
			l := ctx.lock
			l.mu.Lock()
			// The loss deadline (validity less the loss margin) is now.
			l.validUntil = time.Now().Add(share(l.req.ttl, l.client.cfg.lossMargin))
			l.mu.Unlock()

			if err := withTimeout.Err(); err != nil {
				t.Fatalf("Err of the WithTimeout context before the held context was checked = %v; KeepAlive's doc says it does not read the clock", err)
			}
			checked := map[string]context.Context{"held": ctx, "value": withValue}[check]
			if err := checked.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Err of the %s context after the loss deadline = %v, want context.Canceled", check, err)
			}
			<-withTimeout.Done()
			if cause := context.Cause(withTimeout); !errors.Is(cause, ErrLockLost) {
				t.Errorf("cause of the WithTimeout context = %v, want ErrLockLost", cause)
			}
		})
	}
}
