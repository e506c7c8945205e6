package redlock

import (
	"context"
	"errors"
	"testing"
)

// A tracker's wait returns once what it counts has ended, or with the
// error of a ctx that ends first; once closed, no call enters.
func TestTrackerWaits(t *testing.T) {
	var tr tracker
	if !tr.enter() {
		t.Fatal("enter refused before close")
	}
	tr.Add(2) // a round's requests
	tr.Done() // the call returns, its requests run on
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("wait while requests run = %v, want context.Canceled", err)
	}
	tr.close()
	if tr.enter() {
		t.Error("enter after close")
	}
	tr.Done()
	tr.Done()
	if err := tr.wait(ctx); err != nil {
		t.Errorf("wait once nothing runs = %v, want nil", err)
	}
}
