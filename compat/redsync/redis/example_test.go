package redis_test

import (
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// A program builds its pools with NewPool of the package for its client,
// as with go-redsync/redsync; any locksmith driver.Conn is a Pool as well,
// as the plain connections of this example are.
func ExamplePool() {
	var pools []redis.Pool
	for range 3 {
		server, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer server.Close()
		conn := resp.Dial(server.Addr())
		defer conn.Close()
		pools = append(pools, conn)
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
