package adapter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

func TestBackgroundWait(t *testing.T) {
	var b adapter.Background
	if err := b.Wait(context.Background()); err != nil {
		t.Fatalf("Wait with nothing running = %v, want nil", err)
	}
	release := make(chan struct{})
	finished := make(chan struct{})
	b.Go(func() {
		<-release
		close(finished)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a goroutine running and ctx cancelled = %v, want context.Canceled", err)
	}
	close(release)
	if err := b.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	select {
	case <-finished:
	default:
		t.Error("Wait returned before the goroutine finished")
	}
	// Counting starts again after the count dropped to zero.
	again := make(chan struct{})
	b.Go(func() { <-again })
	close(again)
	if err := b.Wait(context.Background()); err != nil {
		t.Errorf("second Wait = %v, want nil", err)
	}
}

func TestBackgroundBeginEnd(t *testing.T) {
	var b adapter.Background
	b.End() // without a Begin: counts nothing
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(done); err != nil {
		t.Fatalf("Wait after an End without a Begin = %v, want nil", err)
	}
	b.Begin()
	if err := b.Wait(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait while a call counted by Begin runs = %v, want context.Canceled", err)
	}
	b.End()
	if err := b.Wait(done); err != nil {
		t.Fatalf("Wait after End = %v, want nil", err)
	}
	var nilB *adapter.Background
	nilB.Begin()
	nilB.End()
}
