package scripts_test

import (
	"context"
	"testing"

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
	if got := run(t, n, scripts.Release, []string{"a", "b", "gone"}, "mine"); got != int64(1) {
		t.Errorf("release = %v, want 1 key deleted", got)
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
	if got := run(t, n, scripts.Release, []string{"k"}, "v"); got != int64(0) {
		t.Errorf("release = %v, want 0", got)
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
