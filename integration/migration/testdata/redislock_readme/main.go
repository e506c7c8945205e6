// The program of bsm/redislock's README: obtain, check the TTL, refresh,
// and see the lock expire. The server's address comes from REDIS_ADDRS,
// and instead of sleeping for fixed times the program asks for a long
// first TTL and waits for the refreshed, short one to run out.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

func main() {
	// Connect to redis.
	client := redis.NewClient(&redis.Options{
		Network: "tcp",
		Addr:    strings.Split(os.Getenv("REDIS_ADDRS"), ",")[0],
	})
	defer client.Close()

	// Create a new lock client.
	locker := redislock.New(client)

	ctx := context.Background()

	// Try to obtain lock.
	lock, err := locker.Obtain(ctx, "my-key", time.Minute, nil)
	if err == redislock.ErrNotObtained {
		fmt.Println("Could not obtain lock!")
	} else if err != nil {
		log.Fatalln(err)
	}

	// Don't forget to defer Release.
	defer lock.Release(ctx)
	fmt.Println("I have a lock!")

	// Check the remaining TTL.
	if ttl, err := lock.TTL(ctx); err != nil {
		log.Fatalln(err)
	} else if ttl > 0 {
		fmt.Println("Yay, I still have my lock!")
	}

	// Extend my lock, for a short time only.
	if err := lock.Refresh(ctx, 50*time.Millisecond, nil); err != nil {
		log.Fatalln(err)
	}

	// Wait for it to run out (at most a minute), then check.
	for range 6000 {
		if ttl, err := lock.TTL(ctx); err != nil {
			log.Fatalln(err)
		} else if ttl == 0 {
			fmt.Println("Now, my lock has expired!")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Fatalln("the lock never expired")
}
