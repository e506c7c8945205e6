package redigo_test

import (
	"context"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/redigo"
	"github.com/locksmith-go/locksmith/redlock"
)

// Three independent Redis servers, each behind its own redigo pool, form one
// Redlock. The pools dial with DialContext, so a lock attempt's deadline also
// bounds dialing.
func ExampleNew() {
	addrs := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}
	var nodes []driver.Conn
	for _, addr := range addrs {
		pool := &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr)
			},
			MaxIdle:     8,
			IdleTimeout: time.Minute,
		}
		defer pool.Close()
		nodes = append(nodes, redigo.New(pool))
	}

	locker, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// Deferred after the clients' Close, so it runs first: close the
	// locker, then the Redis clients.
	defer locker.Close(ctx)
	lock, err := locker.Lock(ctx, "report:daily", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	// ... work while holding the lock ...
}
