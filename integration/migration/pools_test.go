package migration

import (
	"context"
	"testing"

	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"

	"github.com/locksmith-go/locksmith/compat/redsync/redis"
	goredispool "github.com/locksmith-go/locksmith/compat/redsync/redis/goredis/v9"
	redigopool "github.com/locksmith-go/locksmith/compat/redsync/redis/redigo"
	rueidispool "github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/driver/redigo"
	"github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// lendingPool is a redigo pool of a kind other than *redigolib.Pool, as a
// program may wrap its pool for metrics.
type lendingPool struct {
	pool *redigolib.Pool
}

func (p lendingPool) Get() redigolib.Conn { return p.pool.Get() }

func (p lendingPool) GetContext(ctx context.Context) (redigolib.Conn, error) {
	return p.pool.GetContext(ctx)
}

// otherCmdable is a rueidiscompat.Cmdable that does not hand over its
// rueidis client, as a program's own wrapper of the adapter would not.
type otherCmdable struct {
	rueidiscompat.Cmdable
}

func newRedigoPool(t *testing.T, addr string) *redigolib.Pool {
	pool := &redigolib.Pool{
		DialContext: func(ctx context.Context) (redigolib.Conn, error) {
			return redigolib.DialContext(ctx, "tcp", addr)
		},
		MaxIdle: 4,
	}
	t.Cleanup(func() { _ = pool.Close() })
	return pool
}

func newRueidisClient(t *testing.T, addr string) rueidislib.Client {
	client, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// TestNewPoolOfTheUsualClients: for the clients go-redsync/redsync's README
// and examples build pools from, NewPool hands back locksmith's own adapter
// for that client, the one the driver conformance suite checks.
func TestNewPoolOfTheUsualClients(t *testing.T) {
	node := redisnode.Start(t, 1, redisnode.Config{})[0]
	rdb := goredislib.NewClient(&goredislib.Options{Addr: node.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })

	for _, tc := range []struct {
		name string
		pool redis.Pool
		ok   func(redis.Pool) bool
	}{
		{"goredis", goredispool.NewPool(rdb), func(p redis.Pool) bool { _, ok := p.(*goredis.Conn); return ok }},
		{"redigo", redigopool.NewPool(newRedigoPool(t, node.Addr())), func(p redis.Pool) bool { _, ok := p.(*redigo.Conn); return ok }},
		{"rueidis", rueidispool.NewPool(rueidiscompat.NewAdapter(newRueidisClient(t, node.Addr()))), func(p redis.Pool) bool { _, ok := p.(*rueidis.Conn); return ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok(tc.pool) {
				t.Errorf("NewPool() = %T, want the locksmith adapter for the client", tc.pool)
			}
		})
	}
}

// TestNewPoolOfNothing: a nil client gives a nil Pool, which redsync.New
// reports, never a Pool that fails later.
func TestNewPoolOfNothing(t *testing.T) {
	var (
		rdb   *goredislib.Client
		pool  *redigolib.Pool
		other *lendingPool
	)
	for name, p := range map[string]redis.Pool{
		"goredis nil":               goredispool.NewPool(nil),
		"goredis nil *Client":       goredispool.NewPool(rdb),
		"redigo nil":                redigopool.NewPool(nil),
		"redigo nil *Pool":          redigopool.NewPool(pool),
		"redigo nil pointer":        redigopool.NewPool(other),
		"rueidis nil":               rueidispool.NewPool(nil),
		"rueidis nil *Compat":       rueidispool.NewPool((*rueidiscompat.Compat)(nil)),
		"rueidis adapter of no one": rueidispool.NewPool(rueidiscompat.NewAdapter(nil)),
	} {
		if p != nil {
			t.Errorf("NewPool(%s) = %#v, want nil", name, p)
		}
	}
}

// TestOtherPoolsKeepTheDriverContract runs the driver conformance suite on
// the pools NewPool builds around a redigo pool of another type and a
// rueidiscompat.Cmdable that is not the rueidiscompat adapter.
func TestOtherPoolsKeepTheDriverContract(t *testing.T) {
	nodes := redisnode.Start(t, 2, redisnode.Config{})
	t.Run("redigo", func(t *testing.T) {
		drivertest.Run(t, func(t *testing.T) driver.Conn {
			return redigopool.NewPool(lendingPool{newRedigoPool(t, nodes[0].Addr())})
		})
	})
	t.Run("rueidis", func(t *testing.T) {
		drivertest.Run(t, func(t *testing.T) driver.Conn {
			return rueidispool.NewPool(otherCmdable{rueidiscompat.NewAdapter(newRueidisClient(t, nodes[1].Addr()))})
		})
	})
}
