package redigo_test

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/driver/redigo"
)

// waitBackground waits for conn's pub/sub connection and its goroutines to
// end, so that the goroutine check in TestMain sees none of them.
func waitBackground(t *testing.T, conn *redigo.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	if err := conn.Wait(ctx); err != nil {
		t.Errorf("Wait for the pub/sub connection: %v", err)
	}
}

// waited returns conn after registering waitBackground for it as a cleanup
// of t, so it runs after the cleanups registered later.
func waited(t *testing.T, conn *redigo.Conn) *redigo.Conn {
	t.Helper()
	t.Cleanup(func() { waitBackground(t, conn) })
	return conn
}
