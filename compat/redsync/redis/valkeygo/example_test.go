package valkeygo_test

import (
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	valkeylib "github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo"
)

// adapter stands in for valkeycompat.NewAdapter(client), whose Client
// method NewPool calls.
type adapter struct{ client valkeylib.Client }

func (a adapter) Client() valkeylib.Client { return a.client }

func ExampleNewPool() {
	server, err := miniredis.Run() // a program connects to its own server
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	client, err := valkeylib.NewClient(valkeylib.ClientOption{
		InitAddress:       []string{server.Addr()},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	rs := redsync.New(valkeygo.NewPool(adapter{client})) // valkeycompat.NewAdapter(client)

	mutex := rs.NewMutex("my-global-mutex")
	if err := mutex.Lock(); err != nil {
		log.Fatal(err)
	}
	ok, err := mutex.Unlock()
	fmt.Println(ok, err)
	// Output:
	// true <nil>
}
