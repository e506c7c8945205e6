package conformance

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	lsgoredis "github.com/locksmith-go/locksmith/driver/goredis"
	lsredigo "github.com/locksmith-go/locksmith/driver/redigo"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// quietReadTimeout is the read timeout of the clients of the NotifyQuiet
// rule, as short as some applications set it; the rule keeps the channel
// quiet for quietFor.
const (
	quietReadTimeout = 100 * time.Millisecond
	quietFor         = 5 * quietReadTimeout
)

// waitTimeout ends the wait for what a redigo Conn left in the
// background; it is no assertion about speed.
const waitTimeout = time.Minute

// faults returns the drivertest hooks for the adapter called name over the
// server node. The clients are configured with their library's defaults
// except where a rule needs otherwise. The redigo pools dial with
// DialContext and check connections with TestOnBorrowContext, as the
// redigo adapter's package doc asks: Dial and TestOnBorrow take no ctx,
// so against a stalled node a call through them returns only when the
// stall ends, past the rules' bound.
func faults(name string, node *redisnode.Node) drivertest.Faults {
	f := drivertest.Faults{
		Pause: func(t *testing.T) func() {
			node.Pause(t)
			return func() { node.Resume(t) }
		},
	}
	addr := node.Addr()
	switch name {
	case "goredis":
		f.StalledDial = func(t *testing.T) (driver.Conn, func()) {
			hole := newFullBacklog(t)
			client := goredis.NewClient(&goredis.Options{Addr: hole.addr})
			t.Cleanup(func() { client.Close() })
			return lsgoredis.New(client), hole.release
		}
		f.QuietNotifier = func(t *testing.T) (driver.Conn, time.Duration, func() int) {
			var dials atomic.Int64
			client := goredis.NewClient(&goredis.Options{
				Addr:        addr,
				ReadTimeout: quietReadTimeout,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					var d net.Dialer
					return d.DialContext(ctx, network, addr)
				},
			})
			t.Cleanup(func() { client.Close() })
			return lsgoredis.New(client), quietFor, func() int { return int(dials.Load()) }
		}
	case "redigo":
		f.HealthChecked = func(t *testing.T) driver.Conn {
			pool := &redigo.Pool{
				DialContext: func(ctx context.Context) (redigo.Conn, error) {
					return redigo.DialContext(ctx, "tcp", addr)
				},
				TestOnBorrowContext: func(ctx context.Context, c redigo.Conn, _ time.Time) error {
					_, err := redigo.DoContext(c, ctx, "PING")
					return err
				},
				MaxIdle: 8,
			}
			return redigoConn(t, pool)
		}
		f.StalledDial = func(t *testing.T) (driver.Conn, func()) {
			hole := newFullBacklog(t)
			pool := &redigo.Pool{
				DialContext: func(ctx context.Context) (redigo.Conn, error) {
					return redigo.DialContext(ctx, "tcp", hole.addr)
				},
				MaxIdle: 8,
			}
			return redigoConn(t, pool), hole.release
		}
		f.QuietNotifier = func(t *testing.T) (driver.Conn, time.Duration, func() int) {
			var dials atomic.Int64
			pool := &redigo.Pool{
				DialContext: func(ctx context.Context) (redigo.Conn, error) {
					dials.Add(1)
					return redigo.DialContext(ctx, "tcp", addr, redigo.DialReadTimeout(quietReadTimeout))
				},
				MaxIdle: 8,
			}
			return redigoConn(t, pool), quietFor, func() int { return int(dials.Load()) }
		}
	case "rueidis":
		f.StalledDial = func(t *testing.T) (driver.Conn, func()) {
			hole := newFullBacklog(t)
			conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{hole.addr}})
			if err != nil {
				t.Fatalf("rueidis Open: %v", err)
			}
			t.Cleanup(conn.Close)
			return conn, hole.release
		}
		f.QuietNotifier = func(t *testing.T) (driver.Conn, time.Duration, func() int) {
			var dials atomic.Int64
			client, err := rueidis.NewClient(rueidis.ClientOption{
				InitAddress:      []string{addr},
				ConnWriteTimeout: quietReadTimeout,
				DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
					dials.Add(1)
					return d.DialContext(ctx, "tcp", addr)
				},
			})
			if err != nil {
				t.Fatalf("rueidis client: %v", err)
			}
			t.Cleanup(client.Close)
			return lsrueidis.New(client), quietFor, func() int { return int(dials.Load()) }
		}
	case "valkeygo":
		valkeygoFaults(&f, addr)
	}
	return f
}

// redigoConn wraps pool, closing it and waiting for the calls the Conn
// left in the background when the test ends. The cleanup runs after the
// rule ended its fault, so those calls can finish.
func redigoConn(t *testing.T, pool *redigo.Pool) *lsredigo.Conn {
	t.Helper()
	conn := lsredigo.New(pool)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := conn.Wait(ctx); err != nil {
			t.Errorf("redigo Conn.Wait: %v", err)
		}
		pool.Close()
	})
	return conn
}
