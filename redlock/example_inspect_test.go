package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// Inspect shows who holds a resource on each node without changing it,
// for an operator's status page or a health check.
func ExampleClient_Inspect() {
	conns, stop := exampleNodes(3)
	defer stop()
	locker, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "report:daily", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)

	in, err := locker.Inspect(ctx, "report:daily")
	if err != nil {
		log.Fatal(err)
	}
	for i, node := range in.Nodes {
		fmt.Printf("node %d: held %v, ours %v\n", i, node.Exists, node.Value == lock.Value())
	}
	fmt.Println("quorum holds it:", in.Held, "at least until the lock's validity:", !in.HeldUntil.Before(lock.ValidUntil()))
	// Output:
	// node 0: held true, ours true
	// node 1: held true, ours true
	// node 2: held true, ours true
	// quorum holds it: true at least until the lock's validity: true
}
