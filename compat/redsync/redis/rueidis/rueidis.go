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
	"context"
	"reflect"

	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/internal/adapt"
)

// NewPool returns the node that delegate reaches, for redsync.New. The
// client stays the caller's to close, after the last use of the mutexes.
//
// An adapter made by rueidiscompat.NewAdapter hands over the rueidis client
// it wraps, which then runs the scripts directly, with everything
// locksmith's rueidis adapter offers (release notifications, node
// identity). Any other rueidiscompat.Cmdable runs them through its Eval,
// EvalSha and ScriptLoad methods.
//
// NewPool(nil), or a nil pointer, returns a nil Pool, which redsync reports
// as a nil node.
func NewPool(delegate rueidiscompat.Cmdable) redis.Pool {
	if delegate == nil {
		return nil
	}
	if v := reflect.ValueOf(delegate); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	if a, ok := delegate.(interface{ Client() rueidislib.Client }); ok {
		if conn := rueidis.New(a.Client()); conn != nil {
			return conn
		}
		return nil
	}
	return cmdableConn{delegate}
}

var _ driver.Conn = cmdableConn{}

// cmdableConn runs the scripts through a Cmdable's own methods.
type cmdableConn struct {
	cmd rueidiscompat.Cmdable
}

func (c cmdableConn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return adapt.Run(ctx, func(ctx context.Context) (any, error) {
		return reply(c.cmd.Eval(ctx, script, keys, anys(args)...))
	})
}

func (c cmdableConn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return adapt.Run(ctx, func(ctx context.Context) (any, error) {
		val, err := reply(c.cmd.EvalSha(ctx, sha1, keys, anys(args)...))
		if redisErr, ok := rueidislib.IsRedisErr(err); ok && redisErr.IsNoScript() {
			return nil, adapt.NoScript(err)
		}
		return val, err
	})
}

func (c cmdableConn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return adapt.Run(ctx, func(ctx context.Context) (string, error) {
		return c.cmd.ScriptLoad(ctx, script).Result()
	})
}

// reply turns the nil reply, an error for rueidiscompat, into a nil value,
// as driver.Conn has it.
func reply(cmd *rueidiscompat.Cmd) (any, error) {
	val, err := cmd.Result()
	if rueidislib.IsRedisNil(err) {
		return nil, nil
	}
	return val, err
}

func anys(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
