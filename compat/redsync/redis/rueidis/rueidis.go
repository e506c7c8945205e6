// Package rueidis builds the [redis.Pool] of a rueidis client, under the
// package path and name go-redsync/redsync gives its own, and from the same
// argument, a rueidiscompat adapter:
//
//	client, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{"localhost:6379"}})
//	...
//	rs := redsync.New(rueidis.NewPool(rueidiscompat.NewAdapter(client)))
//
// This package is module
// github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis, so that
// only programs that use rueidis download it.
package rueidis

import (
	"reflect"

	"github.com/redis/rueidis/rueidiscompat"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/driver/rueidis"
)

// NewPool returns the node that delegate's rueidis client reaches, for
// redsync.New. The scripts run on that client (delegate.Client()) directly,
// through locksmith's rueidis adapter. The client stays the caller's to
// close, after the last use of the mutexes.
//
// NewPool(nil), a nil pointer, or an adapter of no client returns a nil
// Pool, which redsync reports as a nil node.
func NewPool(delegate rueidiscompat.Cmdable) redis.Pool {
	if delegate == nil {
		return nil
	}
	if v := reflect.ValueOf(delegate); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	if conn := rueidis.New(delegate.Client()); conn != nil {
		return conn
	}
	return nil
}
