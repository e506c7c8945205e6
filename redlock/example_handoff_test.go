package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// A waiter that would poll only once an hour still gets the lock as soon as
// its holder releases it: the nodes' Conns implement driver.Notifier, so
// the waiter hears the release.
func ExampleWithReleaseNotifications() {
	conns, stop := exampleNodes(3)
	defer stop()

	holder, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	waiter, err := redlock.New(conns,
		redlock.WithReleaseNotifications(true), // the default
		redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Hour, 0, 3)))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	held, err := holder.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}

	got := make(chan *redlock.Lock)
	go func() {
		lock, err := waiter.Lock(ctx, "invoice:42", 10*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		got <- lock
	}()
	held.Unlock(ctx)
	lock := <-got
	defer lock.Unlock(ctx)
	fmt.Println("the waiter holds", lock.Key())
	// Output: the waiter holds invoice:42
}
