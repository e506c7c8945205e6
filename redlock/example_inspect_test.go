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
	// A Lock returns once a quorum granted it, so the last node may not
	// have answered yet: count the nodes that hold our value.
	ours := 0
	for _, node := range in.Nodes {
		if node.Exists && node.Value == lock.Value() {
			ours++
		}
	}
	fmt.Printf("our value on a quorum of %d of %d nodes: %v\n", in.Quorum, len(in.Nodes), ours >= in.Quorum)
	fmt.Println("quorum holds it:", in.Held, "at least until the lock's validity:", !in.HeldUntil.Before(lock.ValidUntil()))
	// Output:
	// our value on a quorum of 2 of 3 nodes: true
	// quorum holds it: true at least until the lock's validity: true
}
