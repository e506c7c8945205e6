package redigo_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testServer returns the address of the Redis server to test against: the
// one LOCKSMITH_REDIS_ADDR names, or else a fresh in-process miniredis.
func testServer(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("LOCKSMITH_REDIS_ADDR"); addr != "" {
		return addr
	}
	return miniredis.RunT(t).Addr()
}

// newPool returns a pool of connections to addr that is closed when t ends.
func newPool(t *testing.T, addr string, configure func(*redis.Pool)) *redis.Pool {
	t.Helper()
	pool := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr)
		},
		MaxIdle: 16,
	}
	if configure != nil {
		configure(pool)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestConformance(t *testing.T) {
	proxy := newPausableProxy(t, testServer(t))
	addr := proxy.addr()
	drivertest.Run(t, func(t *testing.T) driver.Conn {
		return waited(t, redigo.New(newPool(t, addr, nil)))
	}, drivertest.WithFaults(drivertest.Faults{
		Pause: func(t *testing.T) func() {
			proxy.pause()
			return proxy.resume
		},
		// The hooks' pools are configured as the package doc asks:
		// TestOnBorrowContext and DialContext, which honour ctx.
		HealthChecked: func(t *testing.T) driver.Conn {
			return waited(t, redigo.New(newPool(t, addr, func(p *redis.Pool) {
				p.TestOnBorrowContext = func(ctx context.Context, c redis.Conn, _ time.Time) error {
					_, err := redis.DoContext(c, ctx, "PING")
					return err
				}
			})))
		},
		StalledDial: func(t *testing.T) (driver.Conn, func()) {
			hole := newBlackHole(t)
			pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
				// AUTH during the dial waits for a reply that
				// never comes.
				return redis.DialContext(ctx, "tcp", hole.addr(), redis.DialPassword("secret"))
			}}
			t.Cleanup(func() { pool.Close() })
			return waited(t, redigo.New(pool)), hole.release
		},
		QuietNotifier: func(t *testing.T) (driver.Conn, time.Duration, func() int) {
			const readTimeout = 100 * time.Millisecond
			var dials atomic.Int64
			pool := newPool(t, addr, func(p *redis.Pool) {
				p.DialContext = func(ctx context.Context) (redis.Conn, error) {
					dials.Add(1)
					return redis.DialContext(ctx, "tcp", addr, redis.DialReadTimeout(readTimeout))
				}
			})
			return waited(t, redigo.New(pool)), 5 * readTimeout, func() int { return int(dials.Load()) }
		},
	}))
}

func TestEvalShaKeepsServerError(t *testing.T) {
	conn := redigo.New(newPool(t, testServer(t), nil))

	const unknownDigest = "0000000000000000000000000000000000000000"
	_, err := conn.EvalSha(context.Background(), unknownDigest, nil, nil)
	if !errors.Is(err, driver.ErrNoScript) {
		t.Fatalf("EvalSha(unknown digest) error = %v, want one matching driver.ErrNoScript", err)
	}
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		t.Errorf("EvalSha(unknown digest) error %q is not a redis.Error; want the server's error kept", err)
	}
}

// A call waiting for a connection from an exhausted pool gives up when its
// ctx ends.
func TestContextEndsWhileWaitingForPool(t *testing.T) {
	pool := newPool(t, testServer(t), func(p *redis.Pool) {
		p.MaxActive = 1
		p.Wait = true
	})
	held := pool.Get()
	defer held.Close()
	conn := redigo.New(pool)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	got, err := conn.Eval(ctx, `return 1`, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Eval with the pool exhausted = %v, %v; want an error matching context.DeadlineExceeded", got, err)
	}
}

func TestNodeID(t *testing.T) {
	pool := &redis.Pool{}
	otherPool := &redis.Pool{}
	tests := []struct {
		name string
		a, b *redis.Pool
		same bool
	}{
		{"same pool twice", pool, pool, true},
		{"two pools", pool, otherPool, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idA, idB := redigo.New(tt.a).NodeID(), redigo.New(tt.b).NodeID()
			if same := idA == idB; same != tt.same {
				t.Errorf("NodeIDs %q and %q: equal = %v, want %v", idA, idB, same, tt.same)
			}
		})
	}
}

func TestNewNilPool(t *testing.T) {
	if conn := redigo.New(nil); conn != nil {
		t.Errorf("New(nil) = %v, want nil", conn)
	}
}

func TestNilConnWait(t *testing.T) {
	var conn *redigo.Conn
	if err := conn.Wait(context.Background()); err != nil {
		t.Errorf("Wait on a nil Conn = %v, want nil", err)
	}
}

// A Conn that the package's constructors did not make, zero or nil, returns
// errors and panics on no method.
func TestUnmadeConn(t *testing.T) {
	drivertest.RunUnmade(t, new(redigo.Conn), (*redigo.Conn)(nil))
}
