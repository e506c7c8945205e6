package adapter

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/callctx"
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

func TestUnwaited(t *testing.T) {
	unwaited, cancel := callctx.WithTimeout(context.Background(), time.Hour, true)
	defer cancel()
	waited, cancelWaited := WithTimeout(context.Background(), time.Hour)
	defer cancelWaited()
	cancellable, cancelCancellable := callctx.WithTimeout(t.Context(), time.Hour, true)
	defer cancelCancellable()
	ended, end := callctx.WithTimeout(context.Background(), time.Hour, true)
	end()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"a round's call on a goroutine no caller waits for", unwaited, true},
		{"a call its caller waits for", waited, false},
		{"a parent a cancel can end", cancellable, false},
		{"ended", ended, false},
		{"background", context.Background(), false},
	} {
		if got := Unwaited(tc.ctx); got != tc.want {
			t.Errorf("Unwaited(%s) = %v, want %v", tc.name, got, tc.want)
		}
		if Unwaited(tc.ctx) && !Inline(tc.ctx) {
			t.Errorf("Unwaited(%s) without Inline", tc.name)
		}
	}
}
