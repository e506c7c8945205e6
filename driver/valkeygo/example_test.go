package valkeygo_test

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/valkeygo"
	"github.com/locksmith-go/locksmith/redlock"
)

// Three independent servers, each behind its own valkey-go client, form
// one Redlock. With ForceSingleClient, NewClient returns a client, and the
// dial's error, for a server that is down; the client dials it again at
// later calls, so the program starts and locks while a minority is down.
func ExampleNew() {
	addrs := []string{"valkey-a:6379", "valkey-b:6379", "valkey-c:6379"}
	var nodes []driver.Conn
	for _, addr := range addrs {
		client, err := valkey.NewClient(valkey.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true,
			Dialer:            net.Dialer{Timeout: 200 * time.Millisecond},
		})
		if client == nil {
			log.Fatal(err) // a bad option, not a server that is down
		}
		if err != nil {
			log.Printf("%s is down for now: %v", addr, err)
		}
		defer client.Close()
		nodes = append(nodes, valkeygo.New(client))
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
