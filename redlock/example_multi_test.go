package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// One lock over two resources: a lock on either of them waits until both
// are released.
func ExampleClient_LockMulti() {
	conns, stop := exampleNodes(3)
	defer stop()
	locker, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	lock, err := locker.LockMulti(ctx, []string{"{order:42}:payment", "{order:42}:stock"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lock.Keys())

	_, err = locker.TryLock(ctx, "{order:42}:stock", 10*time.Second)
	fmt.Println("stock alone:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println("unlock:", lock.Unlock(ctx))
	// Output:
	// holding [{order:42}:payment {order:42}:stock]
	// stock alone: true
	// unlock: <nil>
}
