package redsync_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// exampleNodes starts n in-process Redis servers and returns a pool for
// each. A program builds its pools with NewPool instead, for example
// goredis.NewPool(redis.NewClient(...)) of package redis/goredis/v9.
func exampleNodes(n int) (pools []redis.Pool, stop func()) {
	var stops []func()
	for range n {
		s, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		c := resp.Dial(s.Addr())
		pools = append(pools, c)
		stops = append(stops, func() { c.Close(); s.Close() })
	}
	return pools, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

func Example() {
	nodes, stop := exampleNodes(3)
	defer stop()
	ctx := context.Background()

	rs := redsync.New(nodes...)
	mutex := rs.NewMutex("invoice:42", redsync.WithExpiry(10*time.Second))
	if err := mutex.LockContext(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked until a time in the future:", time.Now().Before(mutex.Until()))

	// ... work on invoice 42, extending the lock if it takes long ...
	if ok, err := mutex.ExtendContext(ctx); !ok {
		log.Fatal(err)
	}

	ok, err := mutex.UnlockContext(ctx)
	fmt.Println("unlocked:", ok, err)
	// Output:
	// locked until a time in the future: true
	// unlocked: true <nil>
}

func ExampleErrTaken() {
	nodes, stop := exampleNodes(3)
	defer stop()

	rs := redsync.New(nodes...)
	holder := rs.NewMutex("report")
	if err := holder.Lock(); err != nil {
		log.Fatal(err)
	}

	err := rs.NewMutex("report").TryLock()
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		fmt.Println("held elsewhere, on nodes", taken.Nodes)
	}
	// Output:
	// held elsewhere, on nodes [0 1 2]
}

func ExampleWithValue() {
	nodes, stop := exampleNodes(3)
	defer stop()
	rs := redsync.New(nodes...)

	// One process takes the lock and hands its value to another, which
	// releases it; either process may run go-redsync/redsync instead.
	mutex := rs.NewMutex("migration")
	if err := mutex.Lock(); err != nil {
		log.Fatal(err)
	}
	value := mutex.Value()

	heir := rs.NewMutex("migration", redsync.WithValue(value))
	ok, err := heir.Unlock()
	fmt.Println("released by the heir:", ok, err)
	// Output:
	// released by the heir: true <nil>
}
