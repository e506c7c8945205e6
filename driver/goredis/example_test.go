package goredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

// Three independent Redis servers, each behind its own go-redis client, form
// one Redlock. The package documentation lists the client options worth
// setting; none is needed to start.
func ExampleNew() {
	addrs := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}
	var nodes []driver.Conn
	for _, addr := range addrs {
		client := redis.NewClient(&redis.Options{Addr: addr})
		defer client.Close()
		nodes = append(nodes, goredis.New(client))
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

// A Redis Cluster counts as one Redlock node: ScriptLoad loads the scripts on
// every shard, and each lock key goes to the shard that owns its slot.
func ExampleNew_cluster() {
	cluster := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"cluster-a:7000", "cluster-a:7001", "cluster-a:7002"},
	})
	defer cluster.Close()
	node := goredis.New(cluster)
	_ = node // one of the Conns given to redlock.New
}
