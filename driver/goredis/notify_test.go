package goredis_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/driver/goredis"
)

// skipNotifyRules skips the drivertest rules of driver.Notifier.
func skipNotifyRules(reason string) []drivertest.Option {
	var opts []drivertest.Option
	for _, rule := range []string{"Notify", "NotifyShared", "NotifyCancel", "NotifyContextDone"} {
		opts = append(opts, drivertest.Skip(rule, reason))
	}
	return opts
}

// A Ring, and a client that cannot subscribe at all, report an error from
// Subscribe, so locksmith polls their node; neither panics.
func TestRingCannotSubscribe(t *testing.T) {
	server, _ := testServers(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": server}})
	defer ring.Close()
	client := redis.NewClient(&redis.Options{Addr: server})
	defer client.Close()
	for name, conn := range map[string]*goredis.Conn{
		"Ring":                goredis.New(ring),
		"Scripter without it": goredis.New(scripterOnly{client}),
	} {
		cancel, err := conn.Subscribe(context.Background(), "channel", func(string) {})
		if err == nil {
			cancel()
			t.Errorf("%s: Subscribe succeeded, want an error", name)
		}
	}
}
