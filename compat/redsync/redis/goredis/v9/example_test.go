package goredis_test

import (
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis/goredis/v9"
)

func ExampleNewPool() {
	server, err := miniredis.Run() // a program connects to its own server
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	client := goredislib.NewClient(&goredislib.Options{Addr: server.Addr()})
	defer client.Close()
	rs := redsync.New(goredis.NewPool(client))

	mutex := rs.NewMutex("my-global-mutex")
	if err := mutex.Lock(); err != nil {
		log.Fatal(err)
	}
	ok, err := mutex.Unlock()
	fmt.Println(ok, err)
	// Output:
	// true <nil>
}
