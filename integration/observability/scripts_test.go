package observability

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// ownerAcquire takes every lock key, KEYS[1..n], or none, and records the
// owner ARGV[3] in KEYS[n+1] for the same TTL.
const ownerAcquire = `
local n = #KEYS - 1
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
redis.call('SET', KEYS[n + 1], ARGV[3], 'PX', ARGV[2])
return 1
`

// TestCustomAcquireRecordsOwner runs a custom acquire script on a lock
// over two keys, with an extra key in their hash slot and an extra
// argument, and checks what it leaves on every server, including one that
// forgot its scripts.
func TestCustomAcquireRecordsOwner(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			tag := "{" + locktest.Key(t) + "}"
			keys, ownerKey := []string{tag + ":a", tag + ":b"}, tag+":owner"
			owner := func(name string) []redlock.Option {
				return []redlock.Option{
					redlock.WithScripts(redlock.Scripts{
						Acquire:   func(string) string { return ownerAcquire },
						ExtraKeys: func([]string) []string { return []string{ownerKey} },
						ExtraArgs: []string{name},
					}),
				}
			}
			first := locktest.Client(t, a, nodes, owner("worker-1")...)
			second := locktest.Client(t, a, nodes, owner("worker-2")...)
			ctx := context.Background()

			l, err := first.LockMulti(ctx, keys, locktest.TTL)
			if err != nil {
				t.Fatalf("LockMulti: %v", err)
			}
			for _, k := range keys {
				locktest.RequireHeldBy(t, nodes, k, l.Value())
			}
			if got := locktest.Holding(t, nodes, ownerKey, "worker-1"); got != 3 {
				t.Errorf("owner key holds worker-1 on %d nodes, want 3", got)
			}
			for i, n := range nodes {
				if ttl := locktest.PTTL(t, n, ownerKey); ttl <= 0 || ttl > locktest.TTL {
					t.Errorf("node %d: owner key PTTL %v, want within (0, %v]", i, ttl, locktest.TTL)
				}
			}
			// Overlapping on one key is enough to be refused.
			if _, err := second.TryLockMulti(ctx, keys[1:], locktest.TTL); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("TryLockMulti of a held key: got %v, want ErrNotAcquired", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			for _, k := range keys {
				locktest.RequireNoKey(t, nodes, k)
			}

			// A server that forgot its scripts runs the custom one again
			// from its source.
			nodes[0].Do(t, "SCRIPT", "FLUSH")
			l, err = second.LockMulti(ctx, keys, time.Second)
			if err != nil {
				t.Fatalf("LockMulti after SCRIPT FLUSH: %v", err)
			}
			if got := locktest.Holding(t, nodes, ownerKey, "worker-2"); got != 3 {
				t.Errorf("owner key holds worker-2 on %d nodes, want 3", got)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			// The owner record expires with the TTL; the test does not
			// wait for it.
			for _, n := range nodes {
				n.Do(t, "DEL", ownerKey)
			}
		})
	}
}
