package goredis

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestAppliesDeadline(t *testing.T) {
	newClient := func(opt redis.Options) *redis.Client {
		client := redis.NewClient(&opt)
		t.Cleanup(func() { client.Close() })
		return client
	}
	failover := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "m", SentinelAddrs: []string{"127.0.0.1:26379"}, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { failover.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cluster.Close() })

	const addr = "127.0.0.1:6379"
	tests := []struct {
		name   string
		client redis.Scripter
		want   bool
	}{
		{"default options", newClient(redis.Options{Addr: addr}), false},
		{"ContextTimeoutEnabled", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true}), true},
		{"ContextTimeoutEnabled, no read or write timeout", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1}), true},
		{"ContextTimeoutEnabled, read deadlines off", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -2}), false},
		{"ContextTimeoutEnabled, write deadlines off", newClient(redis.Options{Addr: addr, ContextTimeoutEnabled: true, WriteTimeout: -2}), false},
		{"failover client with ContextTimeoutEnabled", failover, true},
		{"ring with ContextTimeoutEnabled", ring, false},
		{"cluster client with ContextTimeoutEnabled", cluster, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.client).inline; got != tt.want {
				t.Errorf("New(%s client) runs calls inline = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
