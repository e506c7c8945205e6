package redigo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/pubsub"
	"github.com/locksmith-go/locksmith/driver/redigo"
)

// A subscription whose channel stays quiet for longer than the time the
// pub/sub connection waits for anything (three PingIntervals) keeps its
// connection, which the Hub's PINGs keep busy, and gets a message
// published after that.
func TestSubscriptionOutlastsQuietChannel(t *testing.T) {
	addr := testServer(t)
	var dials atomic.Int64
	pool := newPool(t, addr, func(p *redis.Pool) {
		p.DialContext = func(ctx context.Context) (redis.Conn, error) {
			dials.Add(1)
			return redis.DialContext(ctx, "tcp", addr)
		}
	})
	conn := waited(t, redigo.New(pool))
	got := make(chan string, 1)
	cancel, err := conn.Subscribe(t.Context(), "{quiet}:ch", func(payload string) { got <- payload })
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer cancel()
	before := dials.Load()
	time.Sleep(4 * pubsub.PingInterval)
	if after := dials.Load(); after != before {
		t.Errorf("the pool dialled %d connections while the channel was quiet, want 0", after-before)
	}
	if _, err := conn.Eval(t.Context(), `return redis.call('PUBLISH', KEYS[1], ARGV[1])`, []string{"{quiet}:ch"}, []string{"after"}); err != nil {
		t.Fatalf("PUBLISH: %v", err)
	}
	select {
	case p := <-got:
		if p != "after" {
			t.Errorf("got %q, want after", p)
		}
	case <-time.After(hangLimit):
		t.Fatalf("no message within %v of PUBLISH", hangLimit)
	}
}
