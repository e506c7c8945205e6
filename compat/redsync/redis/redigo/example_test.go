package redigo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	redigolib "github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/compat/redsync/redis/redigo"
)

func ExampleNewPool() {
	var pools []redis.Pool
	for range 3 {
		server, err := miniredis.Run() // a program dials its own servers
		if err != nil {
			log.Fatal(err)
		}
		defer server.Close()
		pool := &redigolib.Pool{
			DialContext: func(ctx context.Context) (redigolib.Conn, error) {
				return redigolib.DialContext(ctx, "tcp", server.Addr())
			},
			MaxIdle: 3,
		}
		defer pool.Close()
		pools = append(pools, redigo.NewPool(pool))
	}
	rs := redsync.New(pools...)

	mutex := rs.NewMutex("my-global-mutex")
	if err := mutex.Lock(); err != nil {
		log.Fatal(err)
	}
	ok, err := mutex.Unlock()
	fmt.Println(ok, err)
	// Output:
	// true <nil>
}
