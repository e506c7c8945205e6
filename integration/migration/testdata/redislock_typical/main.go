// A typical bsm/redislock program: the package-level Obtain on a go-redis
// client, options with metadata and retries, and the errors compared with
// == as code written against bsm/redislock compares them.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

func main() {
	client := redis.NewClient(&redis.Options{Addr: strings.Split(os.Getenv("REDIS_ADDRS"), ",")[0]})
	defer client.Close()
	ctx := context.Background()

	lock, err := redislock.Obtain(ctx, client, "jobs:import", time.Minute, &redislock.Options{
		Metadata: "worker-1",
	})
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("obtained", lock.Key(), "by", lock.Metadata(), "token length", len(lock.Token()))

	retry := redislock.LimitRetry(redislock.LinearBackoff(5*time.Millisecond), 2)
	_, err = redislock.Obtain(ctx, client, "jobs:import", time.Minute, &redislock.Options{RetryStrategy: retry})
	if err == redislock.ErrNotObtained {
		fmt.Println("second worker: not obtained")
	} else {
		log.Fatalln("second worker:", err)
	}

	// The deadline ends the wait between two tries.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = redislock.New(client).Obtain(short, "jobs:import", time.Minute, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(time.Hour),
	})
	if err == context.DeadlineExceeded {
		fmt.Println("third worker: deadline exceeded")
	} else {
		log.Fatalln("third worker:", err)
	}

	if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
		log.Fatalln(err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 {
		log.Fatalln("TTL:", ttl, err)
	}
	fmt.Println("refreshed")

	if err := lock.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	fmt.Println("released")
	if err := lock.Release(ctx); err == redislock.ErrLockNotHeld {
		fmt.Println("released again: not held")
	} else {
		log.Fatalln("released again:", err)
	}
	if err := lock.Refresh(ctx, time.Minute, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("refresh after release: not obtained")
	} else {
		log.Fatalln("refresh after release:", err)
	}
}
