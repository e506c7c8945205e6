package adapter

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
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
