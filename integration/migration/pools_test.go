package migration

import (
	"context"
	"testing"

	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"

	"github.com/locksmith-go/locksmith/compat/redsync"
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

// taggedCmdable is a program's own wrapper of the rueidiscompat adapter,
// held by value and not comparable with == (it has a slice).
type taggedCmdable struct {
	rueidiscompat.Cmdable
	tags []string
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
// for that client, the one the driver conformance suite checks; for
// rueidis, whatever Cmdable carries the client.
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
		{"rueidis wrapper", rueidispool.NewPool(taggedCmdable{rueidiscompat.NewAdapter(newRueidisClient(t, node.Addr())), []string{"app"}}), func(p redis.Pool) bool { _, ok := p.(*rueidis.Conn); return ok }},
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

// TestOtherRedigoPoolsKeepTheDriverContract runs the driver conformance
// suite on the pool NewPool builds around a redigo pool of a type other
// than *redigolib.Pool.
func TestOtherRedigoPoolsKeepTheDriverContract(t *testing.T) {
	node := redisnode.Start(t, 1, redisnode.Config{})[0]
	drivertest.Run(t, func(t *testing.T) driver.Conn {
		return redigopool.NewPool(lendingPool{newRedigoPool(t, node.Addr())})
	})
}

// TestPoolsOfAWrappedAdapter: mutexes work on pools built from a program's
// own wrapper of the rueidiscompat adapter, which redsync.New compares
// without trouble although the wrapper itself is not comparable.
func TestPoolsOfAWrappedAdapter(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	var pools []redis.Pool
	for _, n := range nodes {
		delegate := taggedCmdable{rueidiscompat.NewAdapter(newRueidisClient(t, n.Addr())), []string{"app"}}
		pools = append(pools, rueidispool.NewPool(delegate))
	}
	mutex := redsync.New(pools...).NewMutex("k")
	if err := mutex.Lock(); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	for i, n := range nodes {
		if got := n.Do(t, "GET", "k"); got != mutex.Value() {
			t.Errorf("node %d: GET k = %v, want the mutex's value", i, got)
		}
	}
	if ok, err := mutex.Unlock(); !ok || err != nil {
		t.Errorf("Unlock() = %v, %v, want true, nil", ok, err)
	}
}
