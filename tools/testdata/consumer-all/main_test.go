package main

import (
	"context"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlocktest"
)

// TestRedlocktest takes a lock on the in-process nodes of redlocktest, from
// the module that `go get` fetched.
func TestRedlocktest(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client()
	lock, err := client.Lock(context.Background(), "consumer:redlocktest", 10*time.Second)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
