package redigo_test

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/driver/redigo"
)

// waitBackground waits for what conn's calls left running after their ctx
// ended, so that the goroutine check in TestMain sees none of it.
func waitBackground(t *testing.T, conn *redigo.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	if err := conn.Wait(ctx); err != nil {
		t.Errorf("Wait for the calls left in the background: %v", err)
	}
}

// waited returns conn after registering waitBackground for it as a cleanup
// of t, so it runs after the cleanups registered later, which end the
// faults that hold those calls up.
func waited(t *testing.T, conn *redigo.Conn) *redigo.Conn {
	t.Helper()
	t.Cleanup(func() { waitBackground(t, conn) })
	return conn
}
