package chaos

import (
	"context"
	"errors"
	"testing"
	"time"
)

func read(at, until int) sighting {
	return sighting{Kind: validityRead, At: ms(at), Until: ms(until)}
}

func started(id, at, ttl int) sighting {
	return sighting{Kind: extendStarted, At: ms(at), Until: ms(at + ttl), Extend: id}
}

func returned(id, at, until int) sighting {
	return sighting{Kind: extendReturned, At: ms(at), Until: ms(until), Extend: id}
}

func TestTrustedUntil(t *testing.T) {
	tests := []struct {
		name string
		seen []sighting
		want int // ms; the lock was granted at 0
	}{
		{"nothing read", nil, 0},
		{"first sighting not a read", []sighting{started(1, 1, 100)}, 0},
		{"one read", []sighting{read(1, 100)}, 100},
		{"renewed in time", []sighting{read(1, 100), read(90, 200), read(150, 300)}, 300},
		{"passed before the next read", []sighting{read(1, 100), read(120, 300)}, 100},
		{"passed exactly at the next read", []sighting{read(1, 100), read(100, 300)}, 100},
		{"read after it passed", []sighting{read(1, 100), read(50, 40), read(60, 300)}, 50},
		{"unlocked: zero ValidUntil", []sighting{read(1, 100), read(20, -1<<20)}, 20},
		{
			"a shorter Extend caps the trust while in flight",
			[]sighting{read(1, 300), started(1, 10, 50), read(20, 300), returned(1, 70, 55)},
			60,
		},
		{
			"a shorter Extend that returned",
			[]sighting{read(1, 300), started(1, 10, 50), returned(1, 15, 58)},
			58,
		},
		{
			"a longer Extend in flight does not shorten",
			[]sighting{read(1, 100), started(1, 10, 500), read(50, 100), returned(1, 60, 505)},
			505,
		},
		{
			// The interleaving of concurrent Extends that leaves
			// ValidUntil beyond the keys: once both returned, the
			// lock reports the longer one, and the trust follows it.
			"concurrent Extends, the longer returns last",
			[]sighting{read(1, 300), started(1, 10, 1000), started(2, 15, 100), returned(2, 20, 112), returned(1, 40, 1005)},
			1005,
		},
		{
			"in flight at the end",
			[]sighting{read(1, 300), started(1, 10, 50)},
			60,
		},
	}
	for _, tt := range tests {
		if got := trustedUntil(0, tt.seen); got != ms(tt.want) {
			t.Errorf("%s: trustedUntil = %v, want %v", tt.name, got, ms(tt.want))
		}
	}
	// A lock whose validity had passed before Lock returned: its window is
	// empty, however late the first read comes.
	if got := trustedUntil(ms(5), []sighting{read(6, 3)}); got != ms(5) {
		t.Errorf("read of a passed validity: trustedUntil = %v, want the acquisition at %v (an empty window)", got, ms(5))
	}

}

// A window built from the sightings of the concurrent-Extends interleaving
// contains the next holder's grant, which the nodes allowed once the
// shorter Extend's keys expired: the checker reports it.
func TestTrustedUntilExposesOutlivedKeys(t *testing.T) {
	seen := []sighting{read(1, 300), started(1, 10, 1000), started(2, 15, 100), returned(2, 20, 112), returned(1, 40, 1005)}
	holder := grant{ID: 1, Resource: "a", Kind: kindShared, Acquired: 0, End: min(ms(600), trustedUntil(0, seen))}
	next := win(2, "a", 120, 200) // after the keys of Extend 2 expired at 115
	if got := overlaps([]grant{holder, next}); len(got) != 1 {
		t.Errorf("overlaps = %q, want the next holder inside the shared lock's window", got)
	}
}

// fakeValidity is a ValidUntil the test sets, on a clock it moves.
type fakeValidity struct {
	base       time.Time
	clock      time.Duration
	validUntil time.Duration
	zero       bool
}

func (f *fakeValidity) view(acquired time.Duration) *sharedView {
	return &sharedView{
		now: func() time.Duration { return f.clock },
		at:  func(t time.Time) time.Duration { return t.Sub(f.base) },
		validUntil: func() time.Time {
			if f.zero {
				return time.Time{}
			}
			return f.base.Add(f.validUntil)
		},
		acquired: acquired,
	}
}

func TestSharedView(t *testing.T) {
	f := &fakeValidity{base: time.Now(), clock: ms(1), validUntil: ms(100)}
	v := f.view(0)
	v.read()
	margin := ms(10)

	f.clock = ms(50)
	if !v.valid(margin) {
		t.Fatal("valid = false at 50ms with ValidUntil 100ms")
	}
	// A shorter Extend begins: until it returns the lock is trusted only
	// up to its TTL from its start (90ms), whatever ValidUntil says.
	f.clock = ms(60)
	id := v.extending(ms(30))
	f.clock = ms(75)
	if !v.valid(margin) {
		t.Error("valid = false at 75ms, trusted until 90ms")
	}
	f.clock = ms(85)
	if v.valid(margin) {
		t.Error("valid = true at 85ms with an Extend of 30ms begun at 60ms in flight")
	}
	f.clock, f.validUntil = ms(87), ms(88)
	v.extended(id)
	if got, want := v.trustedUntil(ms(87)), ms(88); got != want {
		t.Errorf("trustedUntil(87ms) = %v, want the validity the Extend reported, %v", got, want)
	}
	// Trust that has passed is not reopened by a later, longer validity.
	f.clock, f.validUntil = ms(95), ms(500)
	if v.valid(margin) {
		t.Error("valid = true after the trust had passed")
	}
	if got, want := v.trustedUntil(ms(95)), ms(88); got != want {
		t.Errorf("trustedUntil(95ms) = %v, want %v", got, want)
	}
	if got, want := v.trustedUntil(ms(60)), ms(90); got != want {
		t.Errorf("trustedUntil(60ms) = %v, want %v", got, want)
	}

	// After Unlock, ValidUntil is zero: no longer valid.
	f2 := &fakeValidity{base: time.Now(), clock: ms(1), validUntil: ms(100)}
	v2 := f2.view(0)
	v2.read()
	f2.clock, f2.zero = ms(20), true
	if v2.valid(0) {
		t.Error("valid = true with a zero ValidUntil")
	}
	if got := v2.trustedUntil(ms(30)); got != ms(20) {
		t.Errorf("trustedUntil after Unlock = %v, want %v", got, ms(20))
	}
}

// countingConn counts the calls that reach it and answers each with its
// number.
type countingConn struct{ calls int }

func (c *countingConn) Eval(context.Context, string, []string, []string) (any, error) {
	c.calls++
	return int64(c.calls), nil
}

func (c *countingConn) EvalSha(context.Context, string, []string, []string) (any, error) {
	c.calls++
	return int64(c.calls), nil
}

func (c *countingConn) ScriptLoad(context.Context, string) (string, error) {
	c.calls++
	return "sha" + string(rune('0'+c.calls)), nil
}

func (c *countingConn) Subscribe(context.Context, string, func(string)) (func(), error) {
	return func() {}, nil
}

func (c *countingConn) NodeID() string { return "node-x" }

func TestReplyConn(t *testing.T) {
	ctx := context.Background()
	type call struct {
		name string
		do   func(c *replyConn) (any, error)
	}
	calls := []call{
		{"Eval", func(c *replyConn) (any, error) { return c.Eval(ctx, "return 1", nil, nil) }},
		{"EvalSha", func(c *replyConn) (any, error) { return c.EvalSha(ctx, "abc", nil, nil) }},
		{"ScriptLoad", func(c *replyConn) (any, error) { return c.ScriptLoad(ctx, "return 1") }},
	}
	tests := []struct {
		fault     replyFault
		wantCalls int
		wantErr   error
	}{
		{repliesIntact, 1, nil},
		{appliedTwice, 2, nil},
		{replyLost, 1, errReplyLost},
	}
	for _, cl := range calls {
		for _, tt := range tests {
			inner := &countingConn{}
			var sw replySwitch
			sw.set(tt.fault)
			c := withReplyFaults(t, inner, &sw)
			reply, err := cl.do(c)
			if inner.calls != tt.wantCalls {
				t.Errorf("%s, fault %d: %d calls reached the node, want %d", cl.name, tt.fault, inner.calls, tt.wantCalls)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s, fault %d: error %v, want %v", cl.name, tt.fault, err, tt.wantErr)
			}
			if tt.wantErr == nil {
				// The reply is the last call's.
				want := any(int64(tt.wantCalls))
				if cl.name == "ScriptLoad" {
					want = "sha" + string(rune('0'+tt.wantCalls))
				}
				if reply != want {
					t.Errorf("%s, fault %d: reply %v, want %v", cl.name, tt.fault, reply, want)
				}
			}
		}
	}
	var sw replySwitch
	c := withReplyFaults(t, &countingConn{}, &sw)
	if got := c.NodeID(); got != "node-x" {
		t.Errorf("NodeID = %q, want the wrapped Conn's", got)
	}
	if cancel, err := c.Subscribe(ctx, "ch", func(string) {}); err != nil || cancel == nil {
		t.Errorf("Subscribe: cancel nil %v, error %v: want the wrapped Conn's subscription", cancel == nil, err)
	}
}

func TestOverlapsByKind(t *testing.T) {
	shared := win(1, "a", 0, 100)
	shared.Kind = kindShared
	over := overlaps([]grant{shared, win(2, "a", 50, 60), win(3, "a", 100, 120), win(4, "a", 110, 130)})
	got := overlapsByKind(over)
	if got[kindShared] != 1 || got[kindPlain] != 1 || len(got) != 2 {
		t.Errorf("overlapsByKind = %v, want shared 1 and plain 1", got)
	}
	if s := perKind(got); s != "plain 1, shared 1" {
		t.Errorf("perKind = %q", s)
	}
	if s := perKind(got, func(k string) string { return " (" + k[:1] + ")" }); s != "plain 1 (p), shared 1 (s)" {
		t.Errorf("perKind with a detail = %q", s)
	}
	if s := perKind(map[string]int{kindDo: 0}); s != "-" {
		t.Errorf("perKind of a zero count = %q, want -", s)
	}
	if s := perKind(nil); s != "-" {
		t.Errorf("perKind(nil) = %q, want -", s)
	}
}
