package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// semaphoreStatusJSON runs status --json --limit limit on key and returns
// its one semaphore.
func semaphoreStatusJSON(t *testing.T, flag string, limit int, key string) semaphoreStatus {
	t.Helper()
	r := locksmith(t, nil, flag, "status", "--json", "--limit", strconv.Itoa(limit), key)
	if r.code != 0 {
		t.Fatalf("status --limit exited %d; stderr: %s", r.code, r.stderr)
	}
	var report statusReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("status --json --limit: %v: %s", err, r.stdout)
	}
	if len(report.Keys) != 0 || len(report.Semaphores) != 1 {
		t.Fatalf("status --json --limit: %s; want one semaphore and no keys", r.stdout)
	}
	return report.Semaphores[0]
}

// countFiles returns how many files dir holds.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestRunLimit starts limit+1 runs of one semaphore at once. Each command
// writes its slot, enters a directory, writes how many it found there,
// and waits for a stop file. Exactly limit commands are inside before the
// stop; a -n run is refused then; the last one enters once a permit is
// released; no command ever found more than limit inside.
func TestRunLimit(t *testing.T) {
	servers, flag := nodes(t, 3)
	const limit = 2
	dir := t.TempDir()
	inside := filepath.Join(dir, "inside")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	const script = `echo "$LOCKSMITH_SLOT $LOCKSMITH_PERMIT" > "$DIR/slot.$$"
touch "$DIR/inside/$$"
ls "$DIR/inside" | wc -l >> "$DIR/counts"
while [ ! -e "$DIR/stop" ]; do sleep 0.02; done
rm "$DIR/inside/$$"`
	env := []string{"DIR=" + dir}
	var procs []*proc
	for range limit + 1 {
		procs = append(procs, start(t, env, flag, "run", "--limit", strconv.Itoa(limit), "--ttl", "1m", "sem", "--", "sh", "-c", script))
	}
	deadline := time.After(testTimeout)
	for countFiles(t, inside) < limit {
		select {
		case <-deadline:
			t.Fatalf("%d commands inside; want %d", countFiles(t, inside), limit)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if r := locksmith(t, nil, flag, "run", "-n", "--limit", strconv.Itoa(limit), "sem", "--", "true"); r.code != exitConflict {
		t.Errorf("-n run with every permit held exited %d; want %d; stderr: %s", r.code, exitConflict, r.stderr)
	}
	if n := countFiles(t, inside); n != limit {
		t.Errorf("%d commands inside with every permit held; want %d", n, limit)
	}
	// A quorum granted each permit; the other node may have granted
	// another slot, released since.
	for i := range limit {
		if n := holders(t, servers, "{sem}:permit:"+strconv.Itoa(i)); n < 2 {
			t.Errorf("%d nodes hold slot %d; want at least 2", n, i)
		}
	}

	ss := semaphoreStatusJSON(t, flag, limit, "sem")
	if ss.Key != "sem" || ss.Limit != limit || ss.Held != limit || ss.Quorum != 2 || ss.Answered != 3 || len(ss.Permits) != limit {
		t.Errorf("status --limit: %+v; want sem, limit 2, 2 permits held, quorum 2, 3 answered", ss)
	}
	for _, n := range ss.Nodes {
		if n.Limit != limit || n.Error != "" {
			t.Errorf("status --limit: node %+v; want the limit record %d", n, limit)
		}
	}
	slots, err := filepath.Glob(filepath.Join(dir, "slot.*"))
	if err != nil {
		t.Fatal(err)
	}
	held := make(map[string]bool) // "slot key" lines the commands wrote
	for _, f := range slots {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		held[strings.TrimSpace(string(b))] = true
	}
	for _, p := range ss.Permits {
		line := strconv.Itoa(p.Slot) + " " + p.Key
		if !p.Held || p.Holders < 2 || p.ValidMilli <= 0 || p.ValidMilli > time.Minute.Milliseconds() || !held[line] {
			t.Errorf("status --limit: permit %+v; want held on at least 2 nodes for at most 1m, by a command that got %q", p, line)
		}
	}
	if len(held) != limit {
		t.Errorf("the commands inside got slots %v; want %d different", held, limit)
	}
	table := locksmith(t, nil, flag, "status", "--limit", strconv.Itoa(limit), "sem")
	for _, want := range []string{"SLOTS HELD", "{sem}:permit:0", "{sem}:permit:1", "at most ", "sem: 2 of 2 permits held by a quorum (quorum 2 of 3 nodes)"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("status --limit table lacks %q: %s", want, table.stdout)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if code := p.wait(t); code != 0 {
			t.Errorf("a run exited %d; want 0; stderr: %s", code, p.stderr.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "counts"))
	if err != nil {
		t.Fatal(err)
	}
	counts := strings.Fields(string(b))
	if len(counts) != limit+1 {
		t.Errorf("%d commands ran; want %d", len(counts), limit+1)
	}
	for _, c := range counts {
		if n, err := strconv.Atoi(c); err != nil || n > limit {
			t.Errorf("a command found %s inside; want at most %d", c, limit)
		}
	}
	for i := range limit {
		if n := holders(t, servers, "{sem}:permit:"+strconv.Itoa(i)); n != 0 {
			t.Errorf("after the runs, %d nodes hold slot %d; want 0", n, i)
		}
	}
	after := semaphoreStatusJSON(t, flag, limit, "sem")
	if after.Held != 0 || len(after.Permits) != 0 {
		t.Errorf("status --limit after the runs: %+v; want no permit", after)
	}
}

// TestRunLimitMismatch holds a permit of a semaphore of 2 while runs with
// another limit try: they fail at once with the infrastructure code, and
// status with the other limit reports the record.
func TestRunLimitMismatch(t *testing.T) {
	_, flag := nodes(t, 3)
	stop := hold(t, flag, "--limit", "2", "--ttl", "1m", "mis")
	for _, args := range [][]string{
		{"run", "-n", "--limit", "3", "mis", "--", "true"},
		{"run", "--limit", "3", "mis", "--", "true"}, // a wait ends at once
		{"run", "--limit", "1", "mis", "--", "true"},
	} {
		r := locksmith(t, nil, append([]string{flag}, args...)...)
		if r.code != exitError {
			t.Errorf("locksmith %q exited %d; want %d; stderr: %s", args, r.code, exitError, r.stderr)
		}
		for _, want := range []string{"limit mismatch", "holds limit 2", "same --limit"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("locksmith %q: stderr %q lacks %q", args, r.stderr, want)
			}
		}
	}
	r := locksmith(t, nil, flag, "status", "--limit", "3", "mis")
	if r.code != 0 || !strings.Contains(r.stdout, "mis: 3 of 3 nodes record limit 2, not 3") {
		t.Errorf("status --limit 3 exited %d: %s; want the record of limit 2 reported", r.code, r.stdout)
	}
	stop()
}

// hold starts a run with args, its flags and KEY, whose command runs
// until told to stop, and returns once the command has started. stop
// tells it to stop and checks that the run exits 0.
func hold(t *testing.T, flag string, args ...string) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	args = append([]string{flag, "run"}, args...)
	args = append(args, "--", "sh", "-c", `touch "$DIR/ready"; while [ ! -e "$DIR/stop" ]; do sleep 0.02; done`)
	p := start(t, []string{"DIR=" + dir}, args...)
	awaitFile(t, p, filepath.Join(dir, "ready"))
	return func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("the holding run exited %d; stderr: %s", code, p.stderr.String())
		}
	}
}

// TestRunLimitBad gives --limit values that are not a limit: each is a
// usage error before anything reaches the nodes.
func TestRunLimitBad(t *testing.T) {
	servers, flag := nodes(t, 3)
	for _, args := range [][]string{
		{"run", "--limit", "0", "bad", "--", "true"},
		{"run", "--limit", "-1", "bad", "--", "true"},
		{"run", "--limit", "1025", "bad", "--", "true"},
		{"run", "--limit", "x", "bad", "--", "true"},
		{"status", "--limit", "0", "bad"},
		{"status", "--limit", "1025", "bad"},
	} {
		r := locksmith(t, nil, append([]string{flag}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--limit") {
			t.Errorf("locksmith %q exited %d, stderr %q; want %d naming --limit", args, r.code, r.stderr, exitUsage)
		}
	}
	for i, s := range servers {
		n, err := rdb(t, s).DBSize(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("node %d holds %d keys after bad --limit values; want 0", i, n)
		}
	}
}

// TestRunLimitEnvironment checks what a command holding a permit gets in
// its environment, and that --limit 1 does not exclude the lock KEY.
func TestRunLimitEnvironment(t *testing.T) {
	_, flag := nodes(t, 3)
	dir := t.TempDir()
	r := locksmith(t, []string{"DIR=" + dir, "LOCKSMITH_SLOT=9"}, flag, "run", "--limit", "3", "--fencing", "envsem", "--", "sh", "-c", `env > "$DIR/env"`)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	env := readEnv(t, filepath.Join(dir, "env"))
	slot, err := strconv.Atoi(env["LOCKSMITH_SLOT"])
	if err != nil || slot < 0 || slot >= 3 {
		t.Errorf("LOCKSMITH_SLOT %q; want 0, 1 or 2", env["LOCKSMITH_SLOT"])
	}
	if want := "{envsem}:permit:" + env["LOCKSMITH_SLOT"]; env["LOCKSMITH_PERMIT"] != want || env["LOCKSMITH_KEY"] != "envsem" || env["LOCKSMITH_TOKEN"] != "1" {
		t.Errorf("LOCKSMITH_PERMIT %q, LOCKSMITH_KEY %q, LOCKSMITH_TOKEN %q; want %q, envsem, 1", env["LOCKSMITH_PERMIT"], env["LOCKSMITH_KEY"], env["LOCKSMITH_TOKEN"], want)
	}
	r = locksmith(t, []string{"DIR=" + dir, "LOCKSMITH_PERMIT=outer"}, flag, "run", "envsem", "--", "sh", "-c", `env > "$DIR/env"`)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	env = readEnv(t, filepath.Join(dir, "env"))
	for _, name := range []string{"LOCKSMITH_PERMIT", "LOCKSMITH_SLOT"} {
		if v, ok := env[name]; ok {
			t.Errorf("%s %q passed to a run without --limit", name, v)
		}
	}

	stop := hold(t, flag, "--limit", "1", "one")
	if r := locksmith(t, nil, flag, "run", "-n", "--limit", "1", "one", "--", "true"); r.code != exitConflict {
		t.Errorf("a second -n --limit 1 run exited %d; want %d", r.code, exitConflict)
	}
	if r := locksmith(t, nil, flag, "run", "-n", "one", "--", "true"); r.code != 0 {
		t.Errorf("a -n run on the lock KEY beside --limit 1 exited %d; want 0; stderr: %s", r.code, r.stderr)
	}
	stop()
}

// TestRunLimitLost deletes the slot key of a running command's permit on
// every node: the renewal finds it gone, and the command is signalled and
// the run exits with the lost code, as for a lock.
func TestRunLimitLost(t *testing.T) {
	servers, flag := nodes(t, 3)
	dir := t.TempDir()
	p := start(t, []string{"DIR=" + dir}, flag, "run", "--limit", "2", "--ttl", "1s", "gonesem", "--", "sh", "-c",
		`echo "$LOCKSMITH_PERMIT" > "$DIR/permit"; touch "$DIR/ready"; while :; do sleep 0.05; done`)
	awaitFile(t, p, filepath.Join(dir, "ready"))
	b, err := os.ReadFile(filepath.Join(dir, "permit"))
	if err != nil {
		t.Fatal(err)
	}
	permit := strings.TrimSpace(string(b))
	for _, s := range servers {
		rdb(t, s).Del(context.Background(), permit)
	}
	if code := p.wait(t); code != exitLost {
		t.Errorf("exit code %d; want %d; stderr: %s", code, exitLost, p.stderr.String())
	}
	if want := `lock on "` + permit + `" lost`; !strings.Contains(p.stderr.String(), want) || !strings.Contains(p.stderr.String(), "sending SIGTERM") {
		t.Errorf("stderr %q lacks %q and the signal", p.stderr.String(), want)
	}
}
