package conformance

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	lsgoredis "github.com/locksmith-go/locksmith/driver/goredis"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// startupConns builds a Conn per address the way the README and the
// adapters' package docs say: go-redis clients and redigo pools dial on
// first use, rueidis Conns come from lsrueidis.Open, which returns a
// Conn while its server is down, and valkey-go clients set
// ForceSingleClient, with which valkey.NewClient does the same.
var startupConns = map[string]func(t *testing.T, addr string) driver.Conn{
	"goredis": func(t *testing.T, addr string) driver.Conn {
		client := goredis.NewClient(&goredis.Options{Addr: addr})
		t.Cleanup(func() { client.Close() })
		return lsgoredis.New(client)
	},
	"redigo": func(t *testing.T, addr string) driver.Conn {
		return redigoConn(t, dialContextPool(addr))
	},
	"rueidis": func(t *testing.T, addr string) driver.Conn {
		conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("lsrueidis.Open: %v", err)
		}
		t.Cleanup(conn.Close)
		return conn
	},
	"valkeygo": func(t *testing.T, addr string) driver.Conn {
		return valkeygoConn(t, valkey.ClientOption{InitAddress: []string{addr}})
	},
}

// A locker built while one of three nodes is down starts and locks with
// the other two, and uses the third once it is up.
func TestStartWithMinorityDown(t *testing.T) {
	for _, name := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			nodes := redisnode.Start(t, 3, redisnode.Config{})
			down := nodes[2]
			down.Stop(t)
			conns := make([]driver.Conn, len(nodes))
			for i, n := range nodes {
				conns[i] = startupConns[name](t, n.Addr())
			}
			client := locktest.NewClient(t, conns)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			key := locktest.Key(t)
			lock, err := client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock with one of three nodes down: %v", err)
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}

			down.Restart(t)
			// The Conn of the restarted node reconnects on its
			// client's own schedule; lock until it holds the key too.
			for {
				lock, err := client.Lock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("Lock after the node came up: %v", err)
				}
				held := locktest.Holding(t, nodes[2:], key, lock.Value())
				if err := lock.Unlock(ctx); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				if held == 1 {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the node that was down at start holds no lock %v after it came up", time.Minute)
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}
