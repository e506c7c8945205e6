package rueidis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/redlock"
)

// Three independent Redis servers, each behind its own rueidis client, form
// one Redlock.
func ExampleNew() {
	addrs := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}
	var nodes []driver.Conn
	for _, addr := range addrs {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		nodes = append(nodes, lsrueidis.New(client))
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

// Open returns a Conn while its server is down, so the program starts,
// and locks, while a minority of the nodes is down; a node that comes up
// later is used from then on.
func ExampleOpen() {
	addrs := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}
	var nodes []driver.Conn
	for _, addr := range addrs {
		conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err) // only for an option that is not one server
		}
		defer conn.Close()
		nodes = append(nodes, conn)
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
