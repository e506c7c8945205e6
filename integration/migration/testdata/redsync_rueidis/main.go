// A typical go-redsync/redsync program on rueidis: a rueidiscompat adapter
// per node, LockContext and UnlockContext, and Until.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/rueidis"
	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
)

func main() {
	ctx := context.Background()
	var pools []redis.Pool
	for _, addr := range strings.Split(os.Getenv("REDIS_ADDRS"), ",") {
		client, err := rueidislib.NewClient(rueidislib.ClientOption{
			InitAddress:  []string{addr},
			DisableCache: true,
		})
		if err != nil {
			panic(err)
		}
		defer client.Close()
		pools = append(pools, rueidis.NewPool(rueidiscompat.NewAdapter(client)))
	}
	rs := redsync.New(pools...)

	mutex := rs.NewMutex("reports:nightly", redsync.WithExpiry(time.Minute))
	if err := mutex.LockContext(ctx); err != nil {
		panic(err)
	}
	fmt.Println("locked, valid for now:", time.Now().Before(mutex.Until()))

	if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
		panic(fmt.Sprintf("unlock: %v %v", ok, err))
	}
	fmt.Println("unlocked")
}
