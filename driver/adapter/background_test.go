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
