package security

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// notifyACL adds to minimalACL what release notifications need: PUBLISH
// from the release script, SUBSCRIBE and UNSUBSCRIBE on the waiter's
// pub/sub connection, and the channels (here all of them).
var notifyACL = append(append([]string(nil), minimalACL...), "+publish", "+subscribe", "+unsubscribe", "&*")

// TestACLReleaseNotifications checks the ACL line for release
// notifications: a user with notifyACL is woken by a release (its retry
// delay is an hour), and the minimal user, which may neither publish nor
// subscribe, still releases and, waiting, polls.
func TestACLReleaseNotifications(t *testing.T) {
	users := []redisnode.User{
		{Name: "locker", Rules: minimalACL},
		{Name: "notified", Rules: notifyACL},
	}
	node := redisnode.Start(t, 1, redisnode.Config{Users: users})[0]
	nodes := []*redisnode.Node{node}
	conns := func(t *testing.T, a adapters.Adapter, user string) []driver.Conn {
		t.Helper()
		return []driver.Conn{a.Conn(t, node.Addr(), adapters.WithAuth(user, aclPassword))}
	}
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			t.Run("notified", func(t *testing.T) {
				key := locktest.Key(t)
				held, err := locktest.NewClient(t, conns(t, a, "notified")).Lock(t.Context(), key, locktest.TTL)
				if err != nil {
					t.Fatalf("holder's Lock: %v", err)
				}
				w := locktest.StartWaiter(t, conns(t, a, "notified"), key)
				w.AwaitWaiting(t, nodes, key)
				lock := w.HandOver(t, held)
				if err := lock.Unlock(t.Context()); err != nil {
					t.Errorf("waiter's Unlock: %v", err)
				}
			})
			t.Run("minimal", func(t *testing.T) {
				key := locktest.Key(t)
				// The refusal comes back as an error at once, not
				// as the end of Subscribe's ctx.
				n := conns(t, a, "locker")[0].(driver.Notifier)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				if stop, err := n.Subscribe(ctx, "{"+key+"}:released", func(string) {}); err == nil {
					stop()
					t.Errorf("Subscribe without permission succeeded")
				} else if ctx.Err() != nil || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("Subscribe without permission = %v, want the server's NOPERM before ctx ends", err)
				}

				client := locktest.NewClient(t, conns(t, a, "locker"))
				held, err := client.Lock(t.Context(), key, locktest.TTL)
				if err != nil {
					t.Fatalf("holder's Lock: %v", err)
				}
				// Its subscriptions refused, a waiter polls; a
				// single attempt shows the key still held.
				if _, err := client.TryLock(t.Context(), key, locktest.TTL); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("TryLock of a held key = %v, want ErrNotAcquired", err)
				}
				done := make(chan error, 1)
				go func() {
					lock, err := client.Lock(t.Context(), key, locktest.TTL)
					if err == nil {
						err = lock.Unlock(t.Context())
					}
					done <- err
				}()
				if err := held.Unlock(t.Context()); err != nil {
					t.Fatalf("Unlock without permission to publish: %v", err)
				}
				if err := <-done; err != nil {
					t.Errorf("polling waiter: %v", err)
				}
				// Only now: the polling waiter may take the key the
				// moment the holder's release deleted it.
				locktest.RequireNoKey(t, nodes, key)
			})
		})
	}
}
