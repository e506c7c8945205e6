// Package valkeygo builds the [redis.Pool] of a valkey-go client, under
// the package path and name go-redsync/redsync gives its own, and from the
// same argument, a valkeycompat adapter:
//
//	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}})
//	...
//	rs := redsync.New(valkeygo.NewPool(valkeycompat.NewAdapter(client)))
//
// NewPool takes any value with the adapter's Client method, so this module
// does not depend on valkeycompat. It is module
// github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo, so that
// only programs that use valkey-go download it.
package valkeygo

import (
	"reflect"

	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/driver/valkeygo"
)

// NewPool returns the node that delegate's valkey-go client reaches, for
// redsync.New. delegate is a valkeycompat adapter, or any value whose
// Client method returns the client. The scripts run on that client
// directly, through locksmith's valkeygo adapter. The client stays the
// caller's to close, after the last use of the mutexes.
//
// NewPool(nil), a nil pointer, or an adapter of no client returns a nil
// Pool, which redsync reports as a nil node.
func NewPool(delegate interface{ Client() valkey.Client }) redis.Pool {
	if delegate == nil {
		return nil
	}
	if v := reflect.ValueOf(delegate); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	if conn := valkeygo.New(delegate.Client()); conn != nil {
		return conn
	}
	return nil
}
