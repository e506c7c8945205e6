package goredis

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

func TestWithContextErr(t *testing.T) {
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
			got := withContextErr(tt.ctx, tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("withContextErr(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("withContextErr(%v) = %v, want an error matching both %v and %v", tt.err, got, tt.want, tt.err)
			}
		})
	}
}
