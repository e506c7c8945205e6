package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// A key ending in ":fencing-token" would collide with a fenced resource's
// counter: a plain lock on "{res}:fencing-token" would make every fenced
// Lock("res") fail, and once the counter exists the plain lock could never
// be acquired. Such keys are refused before any node is asked, fenced or
// not, with or without a key prefix.
func TestLockOnAFencingCounterNameIsRefused(t *testing.T) {
	c := newCluster(t, 3)
	for _, tt := range []struct {
		name   string
		opts   []redlock.Option
		keys   []string
		reason string
	}{
		{"plain", nil, []string{"{res}:fencing-token"}, "{res}:fencing-token"},
		{"fenced", []redlock.Option{redlock.WithFencing()}, []string{"{res}:fencing-token"}, "{res}:fencing-token"},
		{"no hash tag", nil, []string{"res:fencing-token"}, "res:fencing-token"},
		{"among several keys", nil, []string{"{a}", "{a}:fencing-token"}, "{a}:fencing-token"},
		{"prefixed", []redlock.Option{redlock.WithKeyPrefix("app:")}, []string{"{res}:fencing-token"}, "app:{res}:fencing-token"},
		{"prefixed and fenced", []redlock.Option{redlock.WithKeyPrefix("app:"), redlock.WithFencing()}, []string{"{res}:fencing-token"}, "app:{res}:fencing-token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := c.client(t, tt.opts...)
			ctx := context.Background()
			calls := []func() error{
				func() error { _, err := client.TryLockMulti(ctx, tt.keys, time.Second); return err },
				func() error { _, err := client.LockMulti(ctx, tt.keys, time.Second); return err },
			}
			if len(tt.keys) == 1 {
				calls = append(calls,
					func() error { _, err := client.Lock(ctx, tt.keys[0], time.Second); return err },
					func() error { _, err := client.Resume(ctx, tt.keys[0], "v", time.Second); return err },
				)
			}
			for _, call := range calls {
				checkInvalid(t, call(), `redlock: invalid argument: key "`+tt.reason+`" ends in ":fencing-token", reserved for fencing counters`)
			}
		})
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("refused locks left %d keys", n)
	}
	// The name merely containing the suffix is a key like any other.
	l := mustLock(t, c.client(t), "res:fencing-token:log", time.Second)
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}

// A counter key holding something else than a counter (written by hand or
// by a client that ignored the reserved suffix) fails the fenced lock with
// an error that says so, rather than a Lua type error, and no lock key is
// set.
func TestFencedLockReportsACounterThatIsNotACounter(t *testing.T) {
	for _, bad := range []string{"taken-by-a-plain-lock", "-3", "1.5", ""} {
		t.Run(bad, func(t *testing.T) {
			c := newCluster(t, 3)
			client := c.client(t, redlock.WithFencing(), redlock.WithNodeTimeout(testNodeTimeout))
			for _, s := range c.servers {
				s.Set("{res}:fencing-token", bad)
			}
			_, err := client.TryLock(context.Background(), "res", time.Minute)
			var ne *redlock.NodeError
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ne) {
				t.Fatalf("TryLock = %v, want ErrNotAcquired with node errors", err)
			}
			if msg := ne.Error(); !strings.Contains(msg, "fencing counter") || strings.Contains(msg, "attempt to compare") {
				t.Errorf("node error = %q, want one that names the fencing counter", msg)
			}
			for i, s := range c.servers {
				if s.Exists("{res}") {
					t.Errorf("node %d: the lock key was set although the counter is bad", i)
				}
			}
		})
	}
}
