package adapter

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/callctx"
)

// lateContext is a context whose deadline has passed but which has not yet
// reported it, as happens between a socket timeout and the context's own
// timer.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

func TestContextErr(t *testing.T) {
	ioTimeout := os.ErrDeadlineExceeded
	other := errors.New("connection reset")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	late := lateContext{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	notYet := lateContext{Context: context.Background(), deadline: time.Now().Add(time.Hour)}

	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error // nil: the error is returned unchanged
	}{
		{"no error", cancelled, nil, nil},
		{"ctx still live", context.Background(), other, nil},
		{"deadline still ahead", notYet, ioTimeout, nil},
		{"ctx cancelled", cancelled, other, context.Canceled},
		{"deadline passed, not yet reported", late, ioTimeout, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ContextErr(tt.ctx, tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("ContextErr(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("ContextErr(%v) = %v, want an error matching both %v and %v", tt.err, got, tt.want, tt.err)
			}
		})
	}
}

// Run returns when ctx ends, and its Background counts the call left
// running until it returns.
func TestRunReturnsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var b Background
	_, err := Run(ctx, &b, func(context.Context) (int, error) {
		cancel()
		<-release // a call the client never interrupts
		return 1, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait while the call still runs = %v, want context.Canceled", err)
	}
	close(release)
	if err := b.Wait(context.Background()); err != nil {
		t.Errorf("Wait after the call returned = %v, want nil", err)
	}
}

func TestRunReturnsTheReply(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{ctx, context.Background()} {
		got, err := Run(ctx, new(Background), func(context.Context) (string, error) { return "ok", nil })
		if got != "ok" || err != nil {
			t.Errorf("Run = %q, %v; want ok, nil", got, err)
		}
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	called := false
	if _, err := Run(done, new(Background), func(context.Context) (int, error) { called = true; return 0, nil }); !errors.Is(err, context.Canceled) || called {
		t.Errorf("Run with a done ctx = %v (called %v), want context.Canceled without calling", err, called)
	}
}

// A nil Background counts nothing, and Run still returns the reply, or
// returns when ctx ends.
func TestRunWithoutBackground(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if got, err := Run(ctx, nil, func(context.Context) (int, error) { return 1, nil }); got != 1 || err != nil {
		t.Errorf("Run(nil Background) = %d, %v; want 1, nil", got, err)
	}
	release := make(chan struct{})
	finished := make(chan struct{})
	_, err := Run(ctx, nil, func(context.Context) (int, error) {
		defer close(finished)
		cancel()
		<-release
		return 1, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run(nil Background) whose ctx ends first = %v, want context.Canceled", err)
	}
	close(release)
	<-finished
}

// goroutineID returns the number of the calling goroutine, from the first
// line of its stack ("goroutine 7 [running]:").
func goroutineID(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, ok := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	if !ok {
		t.Fatalf("cannot read the goroutine from %q", buf)
	}
	return id
}

// A call that locksmith runs on a goroutine it stops waiting for at the
// deadline (every call of a round of several nodes) runs on that
// goroutine: Run starts none of its own, counts the call in the
// Background while it runs, and returns when the call does, with ctx's
// error.
func TestRunCallsUnwaitedContextsOnTheCallingGoroutine(t *testing.T) {
	// Long enough for Run to be called before the deadline, even on a
	// busy machine: a ctx already done returns without calling do.
	ctx, cancel := callctx.WithTimeout(context.Background(), 100*time.Millisecond, true)
	defer cancel()
	var b Background
	caller := goroutineID(t)
	var callee string
	counted := -1
	_, err := Run(ctx, &b, func(ctx context.Context) (int, error) {
		callee = goroutineID(t)
		b.mu.Lock()
		counted = b.n
		b.mu.Unlock()
		<-ctx.Done() // a call that its client ends only at the deadline
		return 0, os.ErrDeadlineExceeded
	})
	if callee != caller {
		t.Errorf("the call ran on goroutine %s, want the caller's, %s", callee, caller)
	}
	if counted != 1 {
		t.Errorf("Background counted %d calls during the call, want 1", counted)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Errorf("Background.Wait after the call = %v, want nil", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Run = %v, want an error matching context.DeadlineExceeded and the client's", err)
	}
}

// Any other context keeps Run's own goroutine: a context whose maker
// waits for the call (not unwaited), and one derived from an unwaited
// context, which its own maker may cancel early.
func TestRunKeepsItsGoroutineForOtherContexts(t *testing.T) {
	waited, cancelWaited := callctx.WithTimeout(context.Background(), time.Hour, false)
	defer cancelWaited()
	unwaited, cancelUnwaited := callctx.WithTimeout(context.Background(), time.Hour, true)
	defer cancelUnwaited()
	derived, cancelDerived := context.WithCancel(unwaited)
	defer cancelDerived()
	for name, ctx := range map[string]context.Context{"waited": waited, "derived": derived} {
		var b Background
		caller := goroutineID(t)
		var callee string
		if _, err := Run(ctx, &b, func(context.Context) (int, error) {
			callee = goroutineID(t)
			return 0, nil
		}); err != nil {
			t.Fatalf("%s: Run = %v", name, err)
		}
		if callee == caller {
			t.Errorf("%s: the call ran on the caller's goroutine, want one of Run's", name)
		}
		if err := b.Wait(context.Background()); err != nil {
			t.Fatalf("%s: Wait = %v", name, err)
		}
	}
}
