package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// server is an in-process Redis server reached through a fault injector.
type server struct {
	*miniredis.Miniredis
	faults *faults.Conn
	client *redislock.Client
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := miniredis.RunT(t)
	rc := resp.Dial(s.Addr())
	t.Cleanup(func() { rc.Close() })
	f := faults.Wrap(rc)
	return &server{Miniredis: s, faults: f, client: redislock.NewFromConn(f)}
}

// value returns the value stored at key, or "" when there is none.
func (s *server) value(key string) string {
	v, _ := s.Get(key)
	return v
}

// hold stores value at key with ttl, as another owner holding the lock
// would.
func (s *server) hold(t *testing.T, key, value string, ttl time.Duration) {
	t.Helper()
	if err := s.Set(key, value); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
	s.SetTTL(key, ttl)
}

func mustObtain(t *testing.T, c *redislock.Client, key string, ttl time.Duration, opt *redislock.Options) *redislock.Lock {
	t.Helper()
	l, err := c.Obtain(context.Background(), key, ttl, opt)
	if err != nil {
		t.Fatalf("Obtain(%q): %v", key, err)
	}
	return l
}

// strategy is a RetryStrategy that calls next on every NextBackoff and
// counts the calls.
type strategy struct {
	calls int
	next  func(call int) time.Duration
}

func (s *strategy) NextBackoff() time.Duration {
	s.calls++
	return s.next(s.calls)
}
