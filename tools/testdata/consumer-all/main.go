// Command consumer-all takes a lock through every adapter, the redsync and
// redislock compatibility packages and the OpenTelemetry observer, each on
// an in-process node. The proxy check builds it in a module that ran
// `go get` on every module as the README says.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	valkeylib "github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/compat/redsync"
	redsyncgoredis "github.com/locksmith-go/locksmith/compat/redsync/redis/goredis/v9"
	redsyncredigo "github.com/locksmith-go/locksmith/compat/redsync/redis/redigo"
	redsyncrueidis "github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis"
	redsyncvalkeygo "github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/driver/redigo"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/driver/valkeygo"
	lsotel "github.com/locksmith-go/locksmith/otel"
	"github.com/locksmith-go/locksmith/redlock"
)

func main() {
	server, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	ctx := context.Background()

	rdb := goredislib.NewClient(&goredislib.Options{Addr: server.Addr()})
	defer rdb.Close()
	pool := &redigolib.Pool{
		DialContext: func(ctx context.Context) (redigolib.Conn, error) {
			return redigolib.DialContext(ctx, "tcp", server.Addr())
		},
		MaxIdle: 2,
	}
	defer pool.Close()
	rue, err := rueidislib.NewClient(rueidislib.ClientOption{
		InitAddress:       []string{server.Addr()},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rue.Close()
	vk, err := valkeylib.NewClient(valkeylib.ClientOption{
		InitAddress:       []string{server.Addr()},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer vk.Close()

	obs, err := lsotel.NewObserver()
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []struct {
		name string
		conn driver.Conn
	}{
		{"goredis", goredis.New(rdb)},
		{"redigo", redigo.New(pool)},
		{"rueidis", lsrueidis.New(rue)},
		{"valkeygo", valkeygo.New(vk)},
	} {
		locker, err := redlock.New([]driver.Conn{c.conn}, redlock.WithObserver(obs))
		if err != nil {
			log.Fatal(err)
		}
		lock, err := locker.Lock(ctx, "consumer:"+c.name, 10*time.Second)
		if err != nil {
			log.Fatalf("%s: %v", c.name, err)
		}
		if err := lock.Unlock(ctx); err != nil {
			log.Fatalf("%s: %v", c.name, err)
		}
		fmt.Printf("%s: locked and unlocked\n", c.name)
	}

	for _, p := range []struct {
		name string
		rs   *redsync.Redsync
	}{
		{"redsync over goredis", redsync.New(redsyncgoredis.NewPool(rdb))},
		{"redsync over redigo", redsync.New(redsyncredigo.NewPool(pool))},
		{"redsync over rueidis", redsync.New(redsyncrueidis.NewPool(rueidiscompat.NewAdapter(rue)))},
		{"redsync over valkeygo", redsync.New(redsyncvalkeygo.NewPool(valkeyAdapter{vk}))},
	} {
		mutex := p.rs.NewMutex("consumer:redsync")
		if err := mutex.LockContext(ctx); err != nil {
			log.Fatalf("%s: %v", p.name, err)
		}
		if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
			log.Fatalf("%s: unlock %v, %v", p.name, ok, err)
		}
		fmt.Printf("%s: locked and unlocked\n", p.name)
	}

	lock, err := redislock.New(rdb).Obtain(ctx, "consumer:redislock", 10*time.Second, nil)
	if err != nil {
		log.Fatalf("redislock: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatalf("redislock: %v", err)
	}
	fmt.Println("redislock: obtained and released")
}

// valkeyAdapter stands in for valkeycompat.NewAdapter(client), whose
// Client method the redsync pool of valkey-go calls.
type valkeyAdapter struct{ client valkeylib.Client }

func (a valkeyAdapter) Client() valkeylib.Client { return a.client }
