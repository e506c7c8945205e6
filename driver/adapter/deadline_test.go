package adapter

import (
	"context"
	"testing"
	"time"
)

func TestWithTimeoutMarksOnlyContextsThatOnlyTheDeadlineEnds(t *testing.T) {
	cancellable, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	tests := []struct {
		name   string
		parent context.Context
		want   bool
	}{
		{"background parent", context.Background(), true},
		{"detached parent", context.WithoutCancel(cancellable), true},
		{"cancellable parent", cancellable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := WithTimeout(tt.parent, time.Hour)
			defer cancel()
			if got := Inline(ctx); got != tt.want {
				t.Errorf("Inline(WithTimeout(%s)) = %v, want %v", tt.name, got, tt.want)
			}
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("WithTimeout(%s) has no deadline", tt.name)
			}
			// A context derived from it can be cancelled before the
			// deadline, so it must not run inline.
			child, cancelChild := context.WithCancel(ctx)
			defer cancelChild()
			if Inline(child) {
				t.Errorf("Inline(WithCancel(WithTimeout(%s))) = true, want false", tt.name)
			}
		})
	}
}

func TestInlineIsFalseOnceTheContextEnded(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if Inline(ctx) {
		t.Errorf("Inline of a context past its deadline = true, want false")
	}
	if ctx.Err() != context.DeadlineExceeded {
		t.Errorf("ctx.Err() = %v, want %v", ctx.Err(), context.DeadlineExceeded)
	}
}

func TestInlineIsFalseForOtherContexts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), ctx} {
		if Inline(ctx) {
			t.Errorf("Inline(%v) = true, want false", ctx)
		}
	}
}
