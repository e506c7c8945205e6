// A typical go-redsync/redsync program on redigo: one pool per node in a
// []redis.Pool, a mutex with options, contention, Extend, Unlock, and the
// errors compared as callers usually compare them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/redigo"
	redigolib "github.com/gomodule/redigo/redis"
)

func main() {
	var pools []redis.Pool
	for _, addr := range strings.Split(os.Getenv("REDIS_ADDRS"), ",") {
		p := &redigolib.Pool{
			MaxIdle:     3,
			IdleTimeout: 240 * time.Second,
			Dial: func() (redigolib.Conn, error) {
				return redigolib.Dial("tcp", addr)
			},
		}
		defer p.Close()
		pools = append(pools, redigo.NewPool(p))
	}
	rs := redsync.New(pools...)

	mutex := rs.NewMutex("orders:sync",
		redsync.WithExpiry(30*time.Second),
		redsync.WithTries(3),
		redsync.WithRetryDelay(10*time.Millisecond))
	if err := mutex.Lock(); err != nil {
		panic(err)
	}
	fmt.Println("locked, value length", len(mutex.Value()))

	rival := rs.NewMutex("orders:sync", redsync.WithTries(2), redsync.WithRetryDelay(time.Millisecond))
	err := rival.TryLock()
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		fmt.Println("rival: taken on", len(taken.Nodes), "nodes")
	} else {
		panic(fmt.Sprintf("rival TryLock: %v", err))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rival.LockContext(ctx); err == redsync.ErrFailed {
		fmt.Println("rival: gave up with ErrFailed")
	} else {
		panic(fmt.Sprintf("rival LockContext: %v", err))
	}

	if ok, err := mutex.Extend(); !ok || err != nil {
		panic(fmt.Sprintf("extend: %v %v", ok, err))
	}
	fmt.Println("extended")

	if ok, err := mutex.Unlock(); !ok || err != nil {
		panic(fmt.Sprintf("unlock: %v %v", ok, err))
	}
	fmt.Println("unlocked")

	if ok, err := mutex.Unlock(); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		panic(fmt.Sprintf("second unlock: %v %v", ok, err))
	}
	fmt.Println("second unlock: lock already expired")
}
