package rueidis_test

import (
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis"
)

func ExampleNewPool() {
	server, err := miniredis.Run() // a program connects to its own server
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	client, err := rueidislib.NewClient(rueidislib.ClientOption{
		InitAddress:  []string{server.Addr()},
		DisableCache: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	rs := redsync.New(rueidis.NewPool(rueidiscompat.NewAdapter(client)))

	mutex := rs.NewMutex("my-global-mutex")
	if err := mutex.Lock(); err != nil {
		log.Fatal(err)
	}
	ok, err := mutex.Unlock()
	fmt.Println(ok, err)
	// Output:
	// true <nil>
}
