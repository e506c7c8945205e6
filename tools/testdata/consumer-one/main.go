// Command consumer-one takes a lock through the go-redis adapter on an
// in-process node. The proxy check builds it in a module that ran
// `go get` on the adapter alone, as the README's install line says, so the
// root module comes from the adapter's own requirement.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

func main() {
	server, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	defer client.Close()

	locker, err := redlock.New([]driver.Conn{goredis.New(client)})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "consumer:one", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("goredis alone: locked and unlocked")
}
