package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// exampleClient starts an in-process Redis server and returns a go-redis
// client for it. A program connects to its own server instead.
func exampleClient() (client *redis.Client, stop func()) {
	s, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	return rdb, func() { rdb.Close(); s.Close() }
}

func Example() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	locker := redislock.New(client)
	lock, err := locker.Obtain(ctx, "report:daily", time.Minute, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("someone else is on it")
		return
	} else if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	fmt.Println("I have the lock")

	if ttl, err := lock.TTL(ctx); err != nil {
		log.Fatal(err)
	} else if ttl > 0 {
		fmt.Println("still mine")
	}

	// Taking longer than planned: ask for more time.
	if err := lock.Refresh(ctx, 2*time.Minute, nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// I have the lock
	// still mine
}

func ExampleClient_Obtain_retry() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	locker := redislock.New(client)

	holder, err := locker.Obtain(ctx, "job", time.Minute, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer holder.Release(ctx)

	// Try again up to 3 times, 10ms apart.
	backoff := redislock.LimitRetry(redislock.LinearBackoff(10*time.Millisecond), 3)
	_, err = locker.Obtain(ctx, "job", time.Minute, &redislock.Options{RetryStrategy: backoff})
	fmt.Println(err)
	// Output:
	// redislock: not obtained
}

func ExampleClient_ObtainMulti() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	// The hash tag {order:42} keeps both keys in one Redis Cluster slot.
	lock, err := redislock.New(client).ObtainMulti(ctx,
		[]string{"{order:42}:payment", "{order:42}:stock"}, time.Minute, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lock.Keys())
	fmt.Println(lock.Release(ctx))
	// Output:
	// [{order:42}:payment {order:42}:stock]
	// <nil>
}

func ExampleOptions_token() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	locker := redislock.New(client)

	// One process obtains the lock, with metadata, and passes its token on.
	first, err := locker.Obtain(ctx, "import", time.Minute, &redislock.Options{Metadata: "step 1"})
	if err != nil {
		log.Fatal(err)
	}

	// Another process (on this package or on bsm/redislock) takes the same
	// lock again with the token, replacing the metadata and the TTL.
	again, err := locker.Obtain(ctx, "import", time.Minute, &redislock.Options{
		Token:    first.Token(),
		Metadata: "step 2",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.Token() == first.Token(), again.Metadata())
	fmt.Println(again.Release(ctx))
	// Output:
	// true step 2
	// <nil>
}

func ExampleNewFromConn() {
	s, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// A program on redigo or rueidis passes redigo.New(pool) or
	// rueidis.New(client) of locksmith's adapters; this one uses a plain
	// connection to the in-process server.
	conn := resp.Dial(s.Addr())
	defer conn.Close()
	ctx := context.Background()

	lock, err := redislock.NewFromConn(conn).Obtain(ctx, "cleanup", time.Minute, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lock.Key(), lock.Release(ctx))
	// Output:
	// cleanup <nil>
}
