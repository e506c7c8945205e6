package redigo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/adapter"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

// A call whose ctx only its deadline ends (the kind that a redlock round on
// one node makes under a caller's ctx that can never end) returns when
// that deadline passes, even through a pool whose DialContext does not
// honour ctx. redis.DialContext itself does not while it runs a TLS
// handshake: its only bound is DialTLSHandshakeTimeout, none here. Nor
// does a DialContext that lends connections of another pool, whose Dial
// takes no ctx.
func TestDeadlineOnlyCallReturnsThroughADialThatIgnoresContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		pool func(t *testing.T, addr string) *redis.Pool
	}{
		{"redis.DialContext with TLS", func(t *testing.T, addr string) *redis.Pool {
			return newPool(t, addr, func(p *redis.Pool) {
				p.DialContext = func(ctx context.Context) (redis.Conn, error) {
					return redis.DialContext(ctx, "tcp", addr, redis.DialUseTLS(true),
						redis.DialTLSSkipVerify(true), redis.DialTLSHandshakeTimeout(0))
				}
			})
		}},
		{"connections lent by a pool with Dial", func(t *testing.T, addr string) *redis.Pool {
			lender := newPool(t, addr, func(p *redis.Pool) {
				p.DialContext = nil
				p.Dial = func() (redis.Conn, error) {
					return redis.Dial("tcp", addr, redis.DialPassword("secret"))
				}
			})
			return newPool(t, addr, func(p *redis.Pool) { p.DialContext = lender.GetContext })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hole := newBlackHole(t)
			conn := waited(t, redigo.New(tc.pool(t, hole.addr())))
			ctx, cancel := adapter.WithTimeout(context.Background(), 50*time.Millisecond)
			done := make(chan error, 1)
			go func() {
				_, err := conn.Eval(ctx, "return 'ok'", nil, nil)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Eval error = %v; want one matching context.DeadlineExceeded", err)
				}
			case <-time.After(hangLimit):
				// The dial ends once the black hole closes its
				// connections.
				t.Errorf("Eval has not returned %v after it started, though its ctx ended after 50ms", hangLimit)
				hole.release()
				<-done
			}
			cancel() // only once the call has returned, as adapter.WithTimeout requires
			hole.release()
		})
	}
}
