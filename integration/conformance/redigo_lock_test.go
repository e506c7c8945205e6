package conformance

import (
	"context"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// lockHangLimit ends the wait for a Lock that a stalled node holds up; a
// Lock that honours its ctx returns long before. It is shorter than
// redigo's 30s connect timeout.
const lockHangLimit = 20 * time.Second

// lockWhileStalled locks through client, whose last node is stalled,
// with a 1s ctx, and fails the test unless Lock returns, granted by the
// other nodes, within lockHangLimit.
//
// The client's Close, at the test's cleanup, waits for the request that
// the stalled node holds up: a test ends the stall in a cleanup
// registered after it made the client, which runs first.
func lockWhileStalled(t *testing.T, client *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		lock, err := client.Lock(ctx, locktest.Key(t), locktest.TTL)
		if err == nil {
			err = lock.Unlock(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Lock and Unlock with one of three nodes stalled: %v", err)
		}
	case <-time.After(lockHangLimit):
		t.Fatalf("Lock with a 1s ctx and one of three nodes stalled had not returned after %v", lockHangLimit)
	}
}

func dialContextPool(addr string) *redigo.Pool {
	return &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr)
		},
		MaxIdle: 8,
	}
}

// A redigo pool with Dial alone, whose node is a black hole, does not hold
// a Lock past its ctx.
func TestRedigoLockWithBlackHoleNode(t *testing.T) {
	nodes := redisnode.Start(t, 2, redisnode.Config{})
	hole := newFullBacklog(t)
	conns := []driver.Conn{
		redigoConn(t, dialContextPool(nodes[0].Addr())),
		redigoConn(t, dialContextPool(nodes[1].Addr())),
		redigoConn(t, &redigo.Pool{
			Dial:    func() (redigo.Conn, error) { return redigo.Dial("tcp", hole.addr) },
			MaxIdle: 8,
		}),
	}
	client := locktest.NewClient(t, conns)
	t.Cleanup(hole.release) // before the client's Close
	lockWhileStalled(t, client)
}

// A redigo pool that PINGs each connection in TestOnBorrow, whose server
// was stopped with SIGSTOP after the pool was warmed, does not hold a Lock
// past its ctx.
func TestRedigoLockWithStoppedNodeAndHealthCheck(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	conns := make([]driver.Conn, len(nodes))
	for i, n := range nodes {
		pool := dialContextPool(n.Addr())
		pool.TestOnBorrow = func(c redigo.Conn, _ time.Time) error {
			_, err := c.Do("PING")
			return err
		}
		conns[i] = redigoConn(t, pool)
	}
	// Warm every pool with a lock, as an application would have.
	lockWhileStalled(t, locktest.NewClient(t, conns))
	nodes[2].Pause(t)
	client := locktest.NewClient(t, conns)
	t.Cleanup(func() { nodes[2].Resume(t) }) // before the client's Close
	lockWhileStalled(t, client)
}
