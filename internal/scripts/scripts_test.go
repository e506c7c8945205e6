package scripts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

func newNode(t *testing.T) (*miniredis.Miniredis, *faults.Conn, *scripts.Node) {
	t.Helper()
	s := miniredis.RunT(t)
	rc := resp.Dial(s.Addr())
	t.Cleanup(func() { rc.Close() })
	f := faults.Wrap(rc)
	return s, f, scripts.NewNode(f)
}

func run(t *testing.T, n *scripts.Node, s *scripts.Script, keys []string, args ...string) any {
	t.Helper()
	reply, err := n.Run(context.Background(), s, keys, args)
	if err != nil {
		t.Fatalf("%s %v %v: %v", s.Name(), keys, args, err)
	}
	return reply
}

func TestAcquire(t *testing.T) {
	s, _, n := newNode(t)
	if got := run(t, n, scripts.Acquire, []string{"a"}, "v1", "60000"); got != int64(1) {
		t.Errorf("acquire of a free key = %v, want 1", got)
	}
	if got := run(t, n, scripts.Acquire, []string{"a"}, "v2", "60000"); got != int64(0) {
		t.Errorf("acquire of a held key = %v, want 0", got)
	}
	if got, _ := s.Get("a"); got != "v1" {
		t.Errorf("a = %q after a refused acquire, want v1", got)
	}
	if ttl := s.TTL("a"); ttl.Milliseconds() != 60000 {
		t.Errorf("a has TTL %v, want 60s", ttl)
	}
	// Several keys: all or nothing.
	if got := run(t, n, scripts.Acquire, []string{"b", "c", "a"}, "v3", "60000"); got != int64(0) {
		t.Errorf("acquire overlapping a held key = %v, want 0", got)
	}
	if s.Exists("b") || s.Exists("c") {
		t.Errorf("refused multi-key acquire left keys: %v", s.Keys())
	}
	if got := run(t, n, scripts.Acquire, []string{"b", "c"}, "v3", "60000"); got != int64(1) {
		t.Errorf("acquire of free keys = %v, want 1", got)
	}
	for _, k := range []string{"b", "c"} {
		if got, _ := s.Get(k); got != "v3" || s.TTL(k).Milliseconds() != 60000 {
			t.Errorf("%s = %q with TTL %v, want v3 with 60s", k, got, s.TTL(k))
		}
	}
}

func TestExtend(t *testing.T) {
	s, _, n := newNode(t)
	s.Set("a", "mine")
	s.Set("b", "mine")
	s.Set("c", "theirs")
	if got := run(t, n, scripts.Extend, []string{"a", "b"}, "mine", "5000"); got != int64(1) {
		t.Errorf("extend of own keys = %v, want 1", got)
	}
	if s.TTL("a").Milliseconds() != 5000 || s.TTL("b").Milliseconds() != 5000 {
		t.Errorf("TTLs after extend: a %v, b %v; want 5s", s.TTL("a"), s.TTL("b"))
	}
	if got := run(t, n, scripts.Extend, []string{"a", "c"}, "mine", "9000"); got != int64(0) {
		t.Errorf("extend including another owner's key = %v, want 0", got)
	}
	if s.TTL("a").Milliseconds() != 5000 || s.TTL("c") != 0 {
		t.Errorf("refused extend changed TTLs: a %v, c %v", s.TTL("a"), s.TTL("c"))
	}
	if got := run(t, n, scripts.Extend, []string{"gone"}, "mine", "9000"); got != int64(0) {
		t.Errorf("extend of a missing key = %v, want 0", got)
	}
	if s.Exists("gone") {
		t.Error("extend created a missing key")
	}
}

func TestRelease(t *testing.T) {
	s, _, n := newNode(t)
	s.Set("a", "mine")
	s.Set("b", "theirs")
	if got := run(t, n, scripts.Release, []string{"a", "b", "gone"}, "mine"); got != int64(2) {
		t.Errorf("release = %v, want 2 (a deleted, gone already absent)", got)
	}
	if s.Exists("a") || !s.Exists("b") {
		t.Errorf("after release keys are %v, want only b", s.Keys())
	}
}

func TestRunLoadsOnceThenSendsDigests(t *testing.T) {
	s, f, n := newNode(t)
	var methods []string
	f.OnCall(func(m string) { methods = append(methods, m) })
	run(t, n, scripts.Release, []string{"k"}, "v")
	run(t, n, scripts.Release, []string{"k"}, "v")
	want := []string{"ScriptLoad", "EvalSha", "EvalSha"}
	if !equal(methods, want) {
		t.Errorf("calls = %v, want %v", methods, want)
	}

	// After SCRIPT FLUSH the node answers NOSCRIPT; the run falls back to
	// the source and the script works again.
	s.Set("k", "v")
	rc := resp.Dial(s.Addr())
	defer rc.Close()
	if _, err := rc.Do(context.Background(), "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	methods = nil
	if got := run(t, n, scripts.Release, []string{"k"}, "v"); got != int64(1) {
		t.Errorf("release after SCRIPT FLUSH = %v, want 1", got)
	}
	if want := []string{"EvalSha", "Eval"}; !equal(methods, want) {
		t.Errorf("calls after SCRIPT FLUSH = %v, want %v", methods, want)
	}
}

func TestRunFallsBackToEvalWhenLoadFails(t *testing.T) {
	_, f, n := newNode(t)
	var methods []string
	f.OnCall(func(m string) {
		methods = append(methods, m)
		if m == "ScriptLoad" {
			f.Set(faults.Fail)
		} else {
			f.Set(faults.Pass)
		}
	})
	if got := run(t, n, scripts.Release, []string{"k"}, "v"); got != int64(1) {
		t.Errorf("release of an absent key = %v, want 1", got)
	}
	if want := []string{"ScriptLoad", "Eval"}; !equal(methods, want) {
		t.Errorf("calls = %v, want %v", methods, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A Redis client that re-sends a command whose connection broke runs the
// script twice; the second run must give the owner the answer the first
// one did.
func TestAcquireFindingItsOwnValueIsAGrantAndKeepsTheTTL(t *testing.T) {
	s, _, n := newNode(t)
	if got := run(t, n, scripts.Acquire, []string{"a"}, "mine", "60000"); got != int64(1) {
		t.Fatalf("acquire of a free key = %v, want 1", got)
	}
	s.FastForward(10 * time.Second)
	if got := run(t, n, scripts.Acquire, []string{"a"}, "mine", "60000"); got != int64(1) {
		t.Errorf("acquire of a key holding the caller's value = %v, want 1", got)
	}
	if ttl := s.TTL("a"); ttl != 50*time.Second {
		t.Errorf("a has TTL %v after the repeated acquire, want the 50s left of the first", ttl)
	}

	// Several keys: a grant only when every key holds the caller's value.
	if got := run(t, n, scripts.Acquire, []string{"b", "c"}, "mine", "60000"); got != int64(1) {
		t.Fatalf("acquire of free keys b, c = %v, want 1", got)
	}
	s.FastForward(10 * time.Second)
	if got := run(t, n, scripts.Acquire, []string{"b", "c"}, "mine", "60000"); got != int64(1) {
		t.Errorf("acquire of keys holding the caller's value = %v, want 1", got)
	}
	for _, k := range []string{"b", "c"} {
		if ttl := s.TTL(k); ttl != 50*time.Second {
			t.Errorf("%s has TTL %v after the repeated acquire, want 50s", k, ttl)
		}
	}
	// Ours and free: refused, and the free key stays free.
	if got := run(t, n, scripts.Acquire, []string{"b", "free"}, "mine", "60000"); got != int64(0) {
		t.Errorf("acquire of one own key and one free key = %v, want 0", got)
	}
	// Ours and another owner's: refused.
	s.Set("theirs", "other")
	if got := run(t, n, scripts.Acquire, []string{"b", "theirs"}, "mine", "60000"); got != int64(0) {
		t.Errorf("acquire of one own key and another owner's = %v, want 0", got)
	}
	if s.Exists("free") {
		t.Error("refused acquire created key free")
	}
	if ttl := s.TTL("b"); ttl != 50*time.Second {
		t.Errorf("refused acquire changed b's TTL to %v", ttl)
	}
	if got := run(t, n, scripts.Acquire, []string{"a"}, "another", "60000"); got != int64(0) {
		t.Errorf("acquire of a key holding another value = %v, want 0", got)
	}
}

func TestFencedAcquireFindingItsOwnValueIsAGrant(t *testing.T) {
	s, _, n := newNode(t)
	keys := []string{"{a}", "{b}", "{a}:fencing-token", "{b}:fencing-token"}
	s.Set("{b}:fencing-token", "7")
	want := []any{int64(1), int64(7)}
	if got := run(t, n, scripts.FencedAcquire, keys, "mine", "60000"); !equalReply(got, want) {
		t.Fatalf("fenced acquire of free keys = %v, want %v", got, want)
	}
	s.FastForward(10 * time.Second)
	if got := run(t, n, scripts.FencedAcquire, keys, "mine", "60000"); !equalReply(got, want) {
		t.Errorf("fenced acquire of keys holding the caller's value = %v, want %v", got, want)
	}
	if ttl := s.TTL("{a}"); ttl != 50*time.Second {
		t.Errorf("{a} has TTL %v after the repeated acquire, want 50s", ttl)
	}
	if got := run(t, n, scripts.FencedAcquire, keys, "another", "60000"); got != int64(0) {
		t.Errorf("fenced acquire of keys holding another value = %v, want 0", got)
	}
}

func TestReleaseCountsKeysAlreadyGone(t *testing.T) {
	s, _, n := newNode(t)
	s.Set("a", "mine")
	s.Set("b", "mine")
	if got := run(t, n, scripts.Release, []string{"a", "b"}, "mine"); got != int64(2) {
		t.Fatalf("release of own keys = %v, want 2", got)
	}
	// The same release again, as a client that re-sends it would: the
	// keys are released, so it says so.
	if got := run(t, n, scripts.Release, []string{"a", "b"}, "mine"); got != int64(2) {
		t.Errorf("repeated release = %v, want 2 (both keys are gone)", got)
	}
	s.Set("c", "theirs")
	if got := run(t, n, scripts.Release, []string{"a", "c"}, "mine"); got != int64(1) {
		t.Errorf("release of a gone key and another owner's = %v, want 1", got)
	}
	if got, _ := s.Get("c"); got != "theirs" {
		t.Errorf("c = %q after release by another owner, want theirs", got)
	}
}

func TestExtendAppliedTwiceStillConfirms(t *testing.T) {
	s, _, n := newNode(t)
	s.Set("a", "mine")
	for i := range 2 {
		if got := run(t, n, scripts.Extend, []string{"a"}, "mine", "5000"); got != int64(1) {
			t.Errorf("extend #%d = %v, want 1", i+1, got)
		}
		if ttl := s.TTL("a"); ttl != 5*time.Second {
			t.Errorf("TTL after extend #%d = %v, want 5s", i+1, ttl)
		}
	}
}

func equalReply(got any, want []any) bool {
	g, ok := got.([]any)
	if !ok || len(g) != len(want) {
		return false
	}
	for i := range g {
		if g[i] != want[i] {
			return false
		}
	}
	return true
}

// A counter key that holds anything but a token is reported as an error
// reply, before either fenced script writes anything.
func TestFencedScriptsRefuseACounterThatIsNotAToken(t *testing.T) {
	keys := []string{"{a}", "{b}", "{a}:fencing-token", "{b}:fencing-token"}
	for _, bad := range []string{"plain-lock-value", "-1", "2.5", "1234567890123456"} {
		s, _, n := newNode(t)
		s.Set("{a}:fencing-token", "3")
		s.Set("{b}:fencing-token", bad)
		if _, err := n.Run(context.Background(), scripts.FencedAcquire, keys, []string{"mine", "60000"}); err == nil || !strings.Contains(err.Error(), "fencing counter") {
			t.Errorf("fenced acquire with counter %q: error %v, want one about the fencing counter", bad, err)
		}
		if s.Exists("{a}") || s.Exists("{b}") {
			t.Errorf("fenced acquire with counter %q set lock keys: %v", bad, s.Keys())
		}
		s.Set("{a}", "mine")
		s.Set("{b}", "mine")
		if _, err := n.Run(context.Background(), scripts.Fence, keys, []string{"mine", "9"}); err == nil || !strings.Contains(err.Error(), "fencing counter") {
			t.Errorf("fence with counter %q: error %v, want one about the fencing counter", bad, err)
		}
		if got, _ := s.Get("{a}:fencing-token"); got != "3" {
			t.Errorf("fence with counter %q of {b} wrote {a}'s counter: %q", bad, got)
		}
	}
}
