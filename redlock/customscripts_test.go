package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// ownerOptions make a Client whose acquire script records the owner in
// "<key>:owner".
func ownerOptions(owner string) []redlock.Option {
	return []redlock.Option{
		redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithScripts(ownerScripts(owner)),
	}
}

// ownerScripts are the scripts of ownerOptions.
func ownerScripts(owner string) redlock.Scripts {
	return redlock.Scripts{
		Acquire:   func(string) string { return ownerAcquire },
		ExtraKeys: func(keys []string) []string { return []string{keys[0] + ":owner"} },
		ExtraArgs: []string{owner},
	}
}

func TestCustomAcquireRecordsMetadata(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()
	first := c.client(t, ownerOptions("worker-1")...)
	second := c.client(t, ownerOptions("worker-2")...)

	l := mustLock(t, first, "{job:7}", 5*time.Second)
	if got := c.holders(t, "{job:7}", l.Value()); got != 3 {
		t.Fatalf("lock key holds the value on %d nodes, want 3", got)
	}
	if got := c.holders(t, "{job:7}:owner", "worker-1"); got != 3 {
		t.Fatalf("owner key holds worker-1 on %d nodes, want 3", got)
	}
	for i, s := range c.servers {
		if ttl := s.TTL("{job:7}:owner"); ttl <= 0 || ttl > 5*time.Second {
			t.Errorf("node %d: owner key TTL %v, want within (0, 5s]", i, ttl)
		}
	}

	// The custom script refuses like the default one and leaves the
	// record alone.
	if _, err := second.TryLock(ctx, "{job:7}", 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held key: got %v, want ErrNotAcquired", err)
	}
	if got := c.holders(t, "{job:7}:owner", "worker-1"); got != 3 {
		t.Errorf("after a refused attempt the owner key holds worker-1 on %d nodes, want 3", got)
	}

	// Extend and release stay the defaults, which get no extra keys.
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if got := c.holders(t, "{job:7}", l.Value()); got != 0 {
		t.Errorf("lock key left on %d nodes after Unlock", got)
	}
	l2 := mustLock(t, second, "{job:7}", 5*time.Second)
	defer l2.Unlock(ctx)
	if got := c.holders(t, "{job:7}:owner", "worker-2"); got != 3 {
		t.Errorf("owner key holds worker-2 on %d nodes, want 3", got)
	}
}

// ownerRelease deletes the lock key if it holds the value, and the owner
// record with it. It returns the number of lock keys deleted.
const ownerRelease = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0
`

func TestCustomReleaseGetsExtraKeys(t *testing.T) {
	c := newCluster(t, 3)
	scripts := ownerScripts("worker-1")
	scripts.Release = func(string) string { return ownerRelease }
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithScripts(scripts))
	l := mustLock(t, client, "{job:8}", 5*time.Second)
	// A node that forgot its scripts gets the custom one again with EVAL.
	c.faults[1].ForgetScripts(true)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("%d keys left after a release that deletes the owner record", n)
	}
}

func TestWrappedDefaultGetsExtraArgs(t *testing.T) {
	c := newCluster(t, 3)
	// The wrapper refuses every acquisition while ARGV[3] says so and
	// otherwise runs the default script unchanged.
	wrap := func(def string) string {
		return "if ARGV[3] == 'frozen' then return 0 end\n" + def
	}
	frozen := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithScripts(redlock.Scripts{Acquire: wrap, ExtraArgs: []string{"frozen"}}))
	open := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithScripts(redlock.Scripts{Acquire: wrap, ExtraArgs: []string{"open"}}))
	ctx := context.Background()
	if _, err := frozen.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock through the frozen wrapper: got %v, want ErrNotAcquired", err)
	}
	l, err := open.TryLockMulti(ctx, []string{"{o}:a", "{o}:b"}, time.Second)
	if err != nil {
		t.Fatalf("TryLockMulti through the open wrapper: %v", err)
	}
	if got := c.holders(t, "{o}:b", l.Value()); got != 3 {
		t.Errorf("second key held on %d nodes, want 3", got)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func TestScriptOptionsRejectBadInput(t *testing.T) {
	c := newCluster(t, 1)
	custom := func(string) string { return ownerAcquire }
	const onlyDefaults = "redlock: invalid argument: extra keys or arguments are only passed to custom scripts, and every script is the default"
	tests := []struct {
		name string
		opts []redlock.Option
		want string
	}{
		{"empty extend script", []redlock.Option{redlock.WithScripts(redlock.Scripts{Extend: func(string) string { return "" }})},
			"redlock: invalid argument: the extend script is empty"},
		{"blank release script", []redlock.Option{redlock.WithScripts(redlock.Scripts{Release: func(string) string { return " \n\t" }})},
			"redlock: invalid argument: the release script is empty"},
		{"extra args with default scripts", []redlock.Option{redlock.WithScripts(redlock.Scripts{ExtraArgs: []string{"x"}})},
			onlyDefaults},
		{"extra keys with a wrapper that changes nothing", []redlock.Option{redlock.WithScripts(redlock.Scripts{
			Extend:    func(def string) string { return def },
			ExtraKeys: func([]string) []string { return nil }})},
			onlyDefaults},
		{"custom scripts replaced by extra args alone", []redlock.Option{
			redlock.WithScripts(redlock.Scripts{Acquire: custom}),
			redlock.WithScripts(redlock.Scripts{ExtraArgs: []string{"x"}})},
			onlyDefaults},
		{"custom acquire with fencing", []redlock.Option{redlock.WithScripts(redlock.Scripts{Acquire: custom}), redlock.WithFencing()},
			"redlock: invalid argument: a custom acquire script cannot be combined with WithFencing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := redlock.New(c.conns, tt.opts...)
			if client != nil {
				t.Errorf("New returned a client with error %v", err)
			}
			checkInvalid(t, err, tt.want)
		})
	}
}

func TestEmptyExtraKeyIsRejected(t *testing.T) {
	c := newCluster(t, 1)
	client := c.client(t, redlock.WithScripts(redlock.Scripts{
		Acquire:   func(string) string { return ownerAcquire },
		ExtraKeys: func([]string) []string { return []string{""} },
	}))
	_, err := client.TryLock(context.Background(), "k", time.Second)
	checkInvalid(t, err, "redlock: invalid argument: the extra keys function returned an empty key")
	if calls := c.faults[0].Calls(); calls != 0 {
		t.Errorf("%d calls reached the node", calls)
	}
}

// The extra keys function gets a copy of the lock keys: changing it does
// not change the lock.
func TestExtraKeysFunctionCannotChangeLockKeys(t *testing.T) {
	c := newCluster(t, 1)
	client := c.client(t, redlock.WithScripts(redlock.Scripts{
		Acquire: func(string) string { return ownerAcquire },
		ExtraKeys: func(keys []string) []string {
			extra := []string{keys[0] + ":owner"}
			keys[0] = "other"
			return extra
		},
		ExtraArgs: []string{"me"},
	}))
	l, err := client.TryLock(context.Background(), "{k}", time.Second)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if got := c.holders(t, "{k}", l.Value()); got != 1 {
		t.Errorf("lock key held on %d nodes, want 1", got)
	}
	if keys := strings.Join(c.servers[0].Keys(), ","); keys != "{k},{k}:owner" {
		t.Errorf("keys on the node: %s", keys)
	}
}

// A nil field of Scripts leaves that script at its default (the table of
// TestScriptOptionsRejectBadInput counts on it too), so the zero Scripts
// changes nothing.
func TestZeroScriptsChangeNothing(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithScripts(redlock.Scripts{}))
	l := mustLock(t, client, "k", 5*time.Second)
	if err := l.Unlock(context.Background()); err != nil || c.keyCount() != 0 {
		t.Errorf("Unlock = %v with %d keys left, want nil and none", err, c.keyCount())
	}
}

// WithScripts keeps its own copy of ExtraArgs: changing the caller's slice
// afterwards changes nothing.
func TestExtraArgsAreCopied(t *testing.T) {
	c := newCluster(t, 3)
	scripts := ownerScripts("worker-1")
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithScripts(scripts))
	scripts.ExtraArgs[0] = "worker-2"
	mustLock(t, client, "{job:9}", 5*time.Second)
	if got := c.holders(t, "{job:9}:owner", "worker-1"); got != 3 {
		t.Errorf("owner key holds worker-1 on %d nodes, want 3", got)
	}
}
