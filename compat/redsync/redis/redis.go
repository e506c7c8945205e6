// Package redis names the Redis nodes a redsync.Redsync runs on, under
// the package path go-redsync/redsync uses for them, so that code written
// against go-redsync/redsync, such as
//
//	var pools []redis.Pool
//	pools = append(pools, goredis.NewPool(client))
//	rs := redsync.New(pools...)
//
// builds unchanged once its import paths are changed.
//
// A [Pool] is a locksmith [driver.Conn]. The sub-packages build one from a
// Redis client, each in a module of its own so that a program downloads
// only the client it uses:
//
//   - goredis/v9 (module github.com/locksmith-go/locksmith/compat/redsync/redis/goredis): NewPool of a go-redis v9 client;
//   - redigo (module github.com/locksmith-go/locksmith/compat/redsync/redis/redigo): NewPool of a redigo pool;
//   - rueidis (module github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis): NewPool of a rueidiscompat adapter;
//   - valkeygo (module github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo): NewPool of a valkeycompat adapter.
//
// Any locksmith adapter's Conn (goredis.New, redigo.New, rueidis.New, valkeygo.New
// of the driver modules) is a Pool too.
package redis

import "github.com/locksmith-go/locksmith/driver"

// Pool is one independent Redis node, reached through a locksmith
// [driver.Conn].
//
// Unlike go-redsync/redsync's Pool, it has no Get method handing out
// connections: the Conn runs each script itself, over the client's own
// connection pool. Code that only builds pools with NewPool and gives them
// to redsync.New is unaffected.
type Pool = driver.Conn
