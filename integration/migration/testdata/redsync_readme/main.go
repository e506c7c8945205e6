// The program of go-redsync/redsync's README: one go-redis v9 client, one
// mutex, Lock and Unlock. The server's address comes from REDIS_ADDRS
// instead of being localhost:6379.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

func main() {
	addr := strings.Split(os.Getenv("REDIS_ADDRS"), ",")[0]
	client := goredislib.NewClient(&goredislib.Options{
		Addr: addr,
	})
	defer client.Close()
	pool := goredis.NewPool(client)

	rs := redsync.New(pool)

	mutexname := "my-global-mutex"
	mutex := rs.NewMutex(mutexname)

	if err := mutex.Lock(); err != nil {
		panic(err)
	}
	fmt.Println("locked", mutex.Name())

	if ok, err := mutex.Unlock(); !ok || err != nil {
		panic("unlock failed")
	}
	fmt.Println("unlocked")
}
