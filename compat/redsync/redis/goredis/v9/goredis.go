// Package goredis builds the [redis.Pool] of a go-redis v9 client, under
// the package path and name go-redsync/redsync gives its own:
//
//	client := goredislib.NewClient(&goredislib.Options{Addr: "localhost:6379"})
//	rs := redsync.New(goredis.NewPool(client))
//
// The package lives in module
// github.com/locksmith-go/locksmith/compat/redsync/redis/goredis, so that
// only programs that use go-redis download it.
package goredis

import (
	goredislib "github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/driver/goredis"
)

// NewPool returns the node that delegate reaches, for redsync.New. Each
// script runs on the client's own connection pool; the client stays the
// caller's to close, after the last use of the mutexes.
//
// A cluster client or a failover client counts as one node; every call
// through a Pool over a *goredislib.Ring fails, since a Ring shards keys
// over several servers.
// NewPool(nil), or a nil *goredislib.Client, returns a nil Pool, which
// redsync reports as a nil node.
func NewPool(delegate goredislib.UniversalClient) redis.Pool {
	if conn := goredis.New(delegate); conn != nil {
		return conn
	}
	return nil
}
