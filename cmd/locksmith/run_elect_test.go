package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// leaderJSON runs status --json --election on key and returns its leader.
func leaderJSON(t *testing.T, flag, key string) leaderStatus {
	t.Helper()
	r := locksmith(t, nil, flag, "status", "--json", "--election", key)
	if r.code != 0 {
		t.Fatalf("status --election exited %d; stderr: %s", r.code, r.stderr)
	}
	var report statusReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || len(report.Keys) != 1 || report.Keys[0].Leader == nil {
		t.Fatalf("status --json --election: %v: %s", err, r.stdout)
	}
	return *report.Keys[0].Leader
}

// TestRunElect starts two candidates of one election, each running a
// command that writes its term and waits for its stop file. The first
// leads, the second waits; once the first command ends, the second leads
// with a greater term; after both, the election has no leader and the
// nodes hold nothing.
func TestRunElect(t *testing.T) {
	servers, flag := nodes(t, 3)
	dir := t.TempDir()
	const script = `echo "$LOCKSMITH_TERM" > "$DIR/term.$NAME"
while [ ! -e "$DIR/stop.$NAME" ]; do sleep 0.02; done`
	run := func(name string) *proc {
		return start(t, []string{"DIR=" + dir, "NAME=" + name}, flag, "run", "--elect", "host-"+name, "--ttl", "1m", "sched", "--", "sh", "-c", script)
	}
	readTerm := func(p *proc, name string) uint64 {
		t.Helper()
		path := filepath.Join(dir, "term."+name)
		awaitFile(t, p, path)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		term, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || term == 0 {
			t.Fatalf("LOCKSMITH_TERM of %s = %q; want a term", name, b)
		}
		return term
	}
	a := run("a")
	termA := readTerm(a, "a")
	b := run("b")
	if l := leaderJSON(t, flag, "sched"); l.Identity != "host-a" || l.Term != termA {
		t.Errorf("while a leads: status %+v; want host-a, term %d", l, termA)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop.a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t); code != 0 {
		t.Errorf("a exited %d; stderr: %s", code, a.stderr.String())
	}
	termB := readTerm(b, "b")
	if termB <= termA {
		t.Errorf("b leads with term %d after a's %d; want a greater term", termB, termA)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop.b"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t); code != 0 {
		t.Errorf("b exited %d; stderr: %s", code, b.stderr.String())
	}
	if l := leaderJSON(t, flag, "sched"); l.Term != 0 {
		t.Errorf("after both runs: status %+v; want no leader", l)
	}
	for _, key := range []string{"sched", "{sched}:leader"} {
		if n := holders(t, servers, key); n != 0 {
			t.Errorf("after both runs %d nodes hold %s; want 0", n, key)
		}
	}
}

// TestRunElectUsage refuses what an election cannot do before any
// campaign.
func TestRunElectUsage(t *testing.T) {
	_, flag := nodes(t, 3)
	for _, args := range [][]string{
		{"run", "-n", "--elect", "a", "sched", "--", "true"},
		{"run", "--wait", "0", "--elect", "a", "sched", "--", "true"},
		{"run", "--limit", "2", "--elect", "a", "sched", "--", "true"},
		{"run", "--min-hold", "1s", "--elect", "a", "sched", "--", "true"},
		{"run", "--elect", "", "sched", "--", "true"},
	} {
		r := locksmith(t, nil, append([]string{flag}, args...)...)
		if r.code != exitUsage {
			t.Errorf("locksmith %q exited %d; want %d; stderr: %s", args, r.code, exitUsage, r.stderr)
		}
	}
}
