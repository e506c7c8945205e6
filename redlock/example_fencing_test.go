package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/fence"
	"github.com/locksmith-go/locksmith/redlock"
)

// A holder paused past its lock's validity comes back after the next holder
// has written: the ledger, which keeps the highest token it has accepted,
// refuses the late write.
func ExampleWithFencing() {
	conns, stop := exampleNodes(3)
	defer stop()
	var ledger fence.Memory // the protected resource's side

	locker, err := redlock.New(conns, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "ledger", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	// Send lock.Token() with every write; the resource keeps the highest
	// token it has accepted and rejects lower ones (package fence:
	// fence.Memory, or fence.Script inside Redis).
	fmt.Println("first holder's token:", lock.Token())
	lock.Unlock(ctx) // here, or its validity ran out while it was paused

	next, err := locker.Lock(ctx, "ledger", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Unlock(ctx)
	fmt.Println("next holder writes:", ledger.Accept("ledger", next.Token()))
	err = ledger.Accept("ledger", lock.Token())
	fmt.Println("first holder's late write rejected:", errors.Is(err, fence.ErrStale))
	// Output:
	// first holder's token: 1
	// next holder writes: <nil>
	// first holder's late write rejected: true
}
