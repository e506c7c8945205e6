package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// A Semaphore lets at most a few holders in at once: here at most 2
// exports run across every process that uses the nodes.
func ExampleSemaphore() {
	conns, stop := exampleNodes(3)
	defer stop()
	locker, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close(context.Background())
	exports, err := locker.Semaphore("exports", 2)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	first, err := exports.Acquire(ctx, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	second, err := exports.Acquire(ctx, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// Both permits are taken: a third holder waits, or gives up at once.
	_, err = exports.TryAcquire(ctx, time.Minute)
	fmt.Println("third permit:", err != nil)

	if err := first.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	err = exports.Do(ctx, time.Minute, func(ctx context.Context) error {
		permit, _ := redlock.LockFromContext(ctx)
		fmt.Println("exporting, valid for", permit.TTL().Round(time.Minute))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	in, err := exports.Inspect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d permits held\n", in.Held, in.Limit)
	second.Unlock(ctx)
	// Output:
	// third permit: true
	// exporting, valid for 1m0s
	// 1 of 2 permits held
}
