package redisproc

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestPauseResume(t *testing.T) {
	servers, err := Start(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	s := servers[0]
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	// A paused server cannot answer, however long it is given; the
	// deadline only ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := ping(ctx, s.Addr()); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("PING to a paused server: got %v, want a timeout", err)
	}

	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), readyTimeout) // only to end a hang
	defer cancel()
	if err := ping(ctx, s.Addr()); err != nil {
		t.Errorf("PING after Resume: %v", err)
	}

	// A paused server still stops, and signals to it then fail.
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop of a paused server: %v", err)
	}
	if err := s.Resume(); err == nil {
		t.Error("Resume of a stopped server: got no error")
	}
}
