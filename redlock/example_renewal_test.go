package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// buildReport stands for work done under a lock: it checks ctx right
// before each use of the resource.
func buildReport(ctx context.Context) error {
	for _, part := range []string{"sales", "returns"} {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		fmt.Println("adding", part)
	}
	return nil
}

func ExampleClient_Do() {
	conns, stop := exampleNodes(3)
	defer stop()
	locker, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	err = locker.Do(ctx, "report:2026-11", 30*time.Second, func(ctx context.Context) error {
		// The lock is extended while this runs. ctx is cancelled, with
		// context.Cause(ctx) matching redlock.ErrLockLost, as soon as the lock
		// can no longer be guaranteed: stop touching the resource then.
		return buildReport(ctx)
	})
	// err joins fn's error, redlock.ErrLockLost if the lock was lost, and any
	// release error. The lock is released when fn returns, also on panic.
	fmt.Println("done:", err)
	// Output:
	// adding sales
	// adding returns
	// done: <nil>
}

// KeepAlive renews a lock that is held already, for work that does not fit
// in a closure.
func ExampleLock_KeepAlive() {
	conns, stop := exampleNodes(3)
	defer stop()
	locker, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "export", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx) // after stop: stop ends the renewal, not the lock

	work, stopRenewal := lock.KeepAlive(ctx)
	defer stopRenewal()
	for _, batch := range []string{"batch 1", "batch 2"} {
		if work.Err() != nil {
			fmt.Println("lost the lock:", context.Cause(work))
			return
		}
		fmt.Println("exporting", batch)
	}
	// Output:
	// exporting batch 1
	// exporting batch 2
}
