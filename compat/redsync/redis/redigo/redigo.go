// Package redigo builds the [redis.Pool] of a redigo connection pool, under
// the package path and name go-redsync/redsync gives its own:
//
//	pool := redigo.NewPool(&redigolib.Pool{
//		DialContext: func(ctx context.Context) (redigolib.Conn, error) {
//			return redigolib.DialContext(ctx, "tcp", "localhost:6379")
//		},
//		MaxIdle: 3,
//	})
//	rs := redsync.New(pool)
//
// This package is module
// github.com/locksmith-go/locksmith/compat/redsync/redis/redigo, so that
// only programs that use redigo download it.
package redigo

import (
	"context"
	"reflect"

	redigolib "github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

// Pool is what NewPool needs of a redigo connection pool; *redigolib.Pool
// has both methods.
type Pool interface {
	Get() redigolib.Conn
	GetContext(ctx context.Context) (redigolib.Conn, error)
}

// NewPool returns the node that delegate's connections reach, for
// redsync.New. Each script runs on a connection taken from delegate with
// GetContext and handed back (closed) right after; the pool stays the
// caller's to close, after the last use of the mutexes.
//
// NewPool(nil), or a nil pointer, returns a nil Pool, which redsync reports
// as a nil node.
func NewPool(delegate Pool) redis.Pool {
	if delegate == nil {
		return nil
	}
	if v := reflect.ValueOf(delegate); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	pool, ok := delegate.(*redigolib.Pool)
	if !ok {
		// A pool of another kind lends its connections to a redigo
		// pool that keeps none idle, so each goes back to delegate
		// when closed.
		pool = &redigolib.Pool{DialContext: delegate.GetContext}
	}
	return redigo.New(pool)
}
