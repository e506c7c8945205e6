package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// snapshot returns every key, its value (strings only) and its TTL on every
// node, to show that a call changed nothing, once the requests of the
// clients made by c.client have ended.
func (c *cluster) snapshot() []map[string]string {
	for _, client := range c.clients {
		_ = settleCtx(context.Background(), client) // Background never ends
	}
	var all []map[string]string
	for _, s := range c.servers {
		m := make(map[string]string)
		for _, k := range s.Keys() {
			v, _ := s.Get(k)
			m[k] = s.Type(k) + "|" + v + "|" + s.TTL(k).String()
		}
		all = append(all, m)
	}
	return all
}

func sameSnapshot(a, b []map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for k, v := range a[i] {
			if b[i][k] != v {
				return false
			}
		}
	}
	return true
}

func mustInspect(t *testing.T, c *redlock.Client, key string) *redlock.Inspection {
	t.Helper()
	in, err := c.Inspect(context.Background(), key)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", key, err)
	}
	return in
}

func TestInspectNotHeld(t *testing.T) {
	c := newCluster(t, 3)
	in := mustInspect(t, c.client(t), "free")
	if in.Held || in.Value != "" || !in.HeldUntil.IsZero() {
		t.Errorf("Inspect of a free key: Held %v, Value %q, HeldUntil %v; want false, \"\", zero", in.Held, in.Value, in.HeldUntil)
	}
	if in.Key != "free" || in.Quorum != 2 || len(in.Nodes) != 3 {
		t.Errorf("Key %q, Quorum %d, %d nodes; want free, 2, 3", in.Key, in.Quorum, len(in.Nodes))
	}
	for i, s := range in.Nodes {
		if s.Err != nil || s.Exists || s.Type != "" || s.TTL != 0 || s.Counter != 0 {
			t.Errorf("node %d: %+v; want an absent key", i, s)
		}
	}
	if n := c.keyCount(); n != 0 {
		t.Errorf("Inspect left %d keys on the nodes; want 0", n)
	}
}

func TestInspectHeldLock(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	const ttl = 10 * time.Second
	l := mustLock(t, client, "job", ttl)
	before := c.snapshot()
	in := mustInspect(t, client, "job")
	if !sameSnapshot(before, c.snapshot()) {
		t.Errorf("Inspect changed the nodes: before %v, after %v", before, c.snapshot())
	}
	if !in.Held || in.Value != l.Value() {
		t.Fatalf("Held %v, Value %q; want true, the lock's value %q", in.Held, in.Value, l.Value())
	}
	// The keys were set after the lock's round started, so a quorum holds
	// them at least until the lock's validity ends.
	if in.HeldUntil.Before(l.ValidUntil()) {
		t.Errorf("HeldUntil %v is before the lock's ValidUntil %v", in.HeldUntil, l.ValidUntil())
	}
	for i, s := range in.Nodes {
		if s.Err != nil || !s.Exists || s.Type != "string" || s.Value != l.Value() || s.NoExpiry {
			t.Errorf("node %d: %+v; want the lock's key", i, s)
		}
		if s.TTL <= 0 || s.TTL > ttl {
			t.Errorf("node %d: TTL %v; want in (0, %v]", i, s.TTL, ttl)
		}
		if s.ReadAt.IsZero() {
			t.Errorf("node %d: ReadAt is zero", i)
		}
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in := mustInspect(t, client, "job"); in.Held {
		t.Errorf("Inspect after Unlock: Held; want not held")
	}
}

func TestInspectMinority(t *testing.T) {
	c := newCluster(t, 3)
	c.servers[1].Set("job", "someone")
	c.servers[1].SetTTL("job", time.Minute)
	in := mustInspect(t, c.client(t), "job")
	if in.Held || in.Value != "" {
		t.Errorf("one node of three holds the key: Held %v, Value %q; want false, \"\"", in.Held, in.Value)
	}
	if s := in.Nodes[1]; !s.Exists || s.Value != "someone" || s.TTL != time.Minute {
		t.Errorf("node 1: %+v; want value someone, TTL 1m", s)
	}
	if in.Nodes[0].Exists || in.Nodes[2].Exists {
		t.Errorf("nodes 0 and 2: %+v, %+v; want absent keys", in.Nodes[0], in.Nodes[2])
	}
}

func TestInspectFencingCounter(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithFencing())
	for range 2 {
		l := mustLock(t, client, "fenced", time.Minute)
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.settle(t) // every node takes part in the next lock
	}
	l := mustLock(t, client, "fenced", time.Minute)
	c.settle(t)
	before := c.snapshot()
	in := mustInspect(t, client, "fenced")
	if !sameSnapshot(before, c.snapshot()) {
		t.Errorf("Inspect changed the nodes: before %v, after %v", before, c.snapshot())
	}
	for i, s := range in.Nodes {
		if s.Counter != l.Token() {
			t.Errorf("node %d: Counter %d; want the lock's token %d", i, s.Counter, l.Token())
		}
	}
}

func TestInspectKeyPrefix(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithKeyPrefix("app:"))
	l := mustLock(t, client, "job", time.Minute)
	in := mustInspect(t, client, "job")
	if !in.Held || in.Value != l.Value() || in.Key != "job" {
		t.Errorf("Inspect with a key prefix: Key %q, Held %v; want job, held", in.Key, in.Held)
	}
	if in := mustInspect(t, c.client(t), "job"); in.Held {
		t.Errorf("Inspect without the prefix found the prefixed lock")
	}
}

func TestInspectNodeError(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "job", time.Minute)
	c.settle(t) // node 2 has answered the acquire
	c.setFaults(faults.Fail, faults.Hang)
	in := mustInspect(t, client, "job")
	if in.Nodes[0].Err == nil || in.Nodes[1].Err == nil {
		t.Errorf("failed nodes: errors %v, %v; want both non-nil", in.Nodes[0].Err, in.Nodes[1].Err)
	}
	if in.Nodes[0].Exists || in.Nodes[1].Exists {
		t.Errorf("a failed node reports an existing key")
	}
	if s := in.Nodes[2]; s.Err != nil || s.Value != l.Value() {
		t.Errorf("node 2: %+v; want the lock's value", s)
	}
	if in.Held {
		t.Errorf("Held with one node of three answering")
	}
}

func TestInspectOtherTypesAndNoExpiry(t *testing.T) {
	c := newCluster(t, 3)
	for _, s := range c.servers {
		s.Set("forever", "v")
	}
	if _, err := c.servers[0].Lpush("list", "x"); err != nil {
		t.Fatal(err)
	}
	client := c.client(t)
	in := mustInspect(t, client, "forever")
	if !in.Held || in.Value != "v" || !in.HeldUntil.IsZero() {
		t.Errorf("keys without expiry: Held %v, Value %q, HeldUntil %v; want true, v, zero", in.Held, in.Value, in.HeldUntil)
	}
	if s := in.Nodes[0]; !s.NoExpiry || s.TTL != 0 {
		t.Errorf("node 0: NoExpiry %v, TTL %v; want true, 0", s.NoExpiry, s.TTL)
	}
	in = mustInspect(t, client, "list")
	if s := in.Nodes[0]; !s.Exists || s.Type != "list" || s.Value != "" {
		t.Errorf("a list key: %+v; want Exists, Type list, no Value", s)
	}
}

func TestInspectInvalid(t *testing.T) {
	client := newCluster(t, 1).client(t)
	var nilCtx context.Context
	if _, err := client.Inspect(nilCtx, "k"); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Inspect(nil ctx): %v; want ErrInvalidArgument", err)
	}
	if _, err := client.Inspect(context.Background(), ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Inspect(\"\"): %v; want ErrInvalidArgument", err)
	}
}

func TestInspectValuePrefix(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t)
	l := mustLock(t, client, "job", time.Minute)
	in := mustInspect(t, client, "job")
	want := l.Value()[:4] + "…"
	if got := in.ValuePrefix(); got != want {
		t.Errorf("Inspection.ValuePrefix() = %q; want %q", got, want)
	}
	if got := in.Nodes[0].ValuePrefix(); got != want {
		t.Errorf("NodeState.ValuePrefix() = %q; want %q", got, want)
	}
	for _, s := range c.servers {
		s.Set("short", "tiny-value")
	}
	if got := mustInspect(t, client, "short").ValuePrefix(); got != "" {
		t.Errorf("ValuePrefix of a 10-character value = %q; want \"\"", got)
	}
}
