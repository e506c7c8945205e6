package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContendingRuns runs two sequences of locksmith runs at once on one
// key, each run's command incrementing a counter file with a pause between
// its read and its write. Without mutual exclusion increments are lost and
// the commands find each other inside.
func TestContendingRuns(t *testing.T) {
	_, flag := nodes(t, 3)
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const script = `mkdir "$DIR/inside" || echo overlap >> "$DIR/overlaps"
n=$(cat "$DIR/counter")
sleep 0.05
echo $((n + 1)) > "$DIR/counter"
rmdir "$DIR/inside"`
	const perWorker = 4
	env := []string{"DIR=" + dir}
	codes := make(chan int, 2*perWorker)
	for range 2 {
		go func() {
			for range perWorker {
				p := start(t, env, flag, "run", "counter", "--", "sh", "-c", script)
				<-p.done
				codes <- p.code
			}
		}()
	}
	for range 2 * perWorker {
		select {
		case code := <-codes:
			if code != 0 {
				t.Errorf("a run exited %d; want 0", code)
			}
		case <-time.After(testTimeout):
			t.Fatal("the runs did not finish")
		}
	}
	got, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(string(got)); n != strconv.Itoa(2*perWorker) {
		t.Errorf("counter = %s; want %d", n, 2*perWorker)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("commands overlapped: %q", b)
	}
}

// validUntilRE finds the validity locksmith reports when it signals the
// command of a lost lock.
var validUntilRE = regexp.MustCompile(`lost \(.*\); valid until (\S+); sending SIGTERM`)

// TestLostLockSignalsBeforeValidity stops two of three nodes with SIGSTOP
// while the command runs: renewal cannot reach a quorum, and the command
// must get SIGTERM before the lock's validity ends. The command writes the
// time it got the signal; locksmith writes the validity it signals against;
// both come from this machine's clock.
func TestLostLockSignalsBeforeValidity(t *testing.T) {
	servers, flag := nodes(t, 3)
	dir := t.TempDir()
	const script = `trap 'date +%s.%N > "$DIR/term"; exit 0' TERM
touch "$DIR/ready"
while :; do sleep 0.05; done`
	p := start(t, []string{"DIR=" + dir}, flag, "run", "--ttl", "3s", "lost", "--", "sh", "-c", script)
	awaitFile(t, p, filepath.Join(dir, "ready"))
	servers[0].Pause(t)
	servers[1].Pause(t)
	code := p.wait(t)
	servers[0].Resume(t)
	servers[1].Resume(t)
	if code != exitLost {
		t.Fatalf("exit code %d; want %d (lost); stderr: %s", code, exitLost, p.stderr.String())
	}
	m := validUntilRE.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("stderr does not report the lost lock's validity: %s", p.stderr.String())
	}
	validUntil, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "term"))
	if err != nil {
		t.Fatalf("the command got no SIGTERM: %v; stderr: %s", err, p.stderr.String())
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatal(err)
	}
	got := time.Unix(0, int64(secs*1e9))
	if !got.Before(validUntil) {
		t.Errorf("the command got SIGTERM at %s, not before the lock's validity ended at %s", got.Format(time.RFC3339Nano), m[1])
	}
}

func TestExitCodes(t *testing.T) {
	servers, flag := nodes(t, 3)
	ctx := context.Background()
	for _, s := range servers {
		if err := rdb(t, s).Set(ctx, "taken", "someone-else-0123456789", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data")
	if err := os.WriteFile(notExec, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := "--nodes=redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"command's code", []string{flag, "run", "k1", "--", "sh", "-c", "exit 3"}, 3},
		{"command killed by a signal", []string{flag, "run", "k2", "--", "sh", "-c", "kill -KILL $$"}, 128 + 9},
		{"command not found", []string{flag, "run", "k3", "--", filepath.Join(dir, "missing")}, exitNotFound},
		{"command not executable", []string{flag, "run", "k4", "--", notExec}, exitNoExec},
		{"held, -n", []string{flag, "run", "-n", "taken", "--", "true"}, exitConflict},
		{"held, --wait 0", []string{flag, "run", "--wait", "0", "taken", "--", "true"}, exitConflict},
		{"held, --wait ran out", []string{flag, "run", "--wait", "300ms", "taken", "--", "true"}, exitConflict},
		{"held, --conflict-exit-code", []string{flag, "run", "-n", "--conflict-exit-code", "9", "taken", "--", "true"}, 9},
		{"no quorum reachable", []string{closed, "run", "-n", "k5", "--", "true"}, exitError},
		{"no quorum reachable, waiting", []string{closed, "run", "k5", "--", "true"}, exitError},
		{"no quorum, --error-exit-code", []string{closed, "--error-exit-code", "70", "run", "-n", "k5", "--", "true"}, 70},
		{"no nodes", []string{"run", "k6", "--", "true"}, exitError},
		{"bad URL", []string{"--nodes", "http://127.0.0.1:1", "run", "k6", "--", "true"}, exitError},
		{"no command", []string{flag, "run", "k7"}, exitUsage},
		{"flag after KEY", []string{flag, "run", "k7", "--shell", "true"}, exitUsage},
		{"unknown flag", []string{flag, "run", "--no-such-flag", "k7", "--", "true"}, exitUsage},
		{"bad --ttl", []string{flag, "run", "--ttl", "-1s", "k7", "--", "true"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := locksmith(t, []string{"LOCKSMITH_NODES="}, tc.args...)
			if r.code != tc.want {
				t.Errorf("exit code %d; want %d; stderr: %s", r.code, tc.want, r.stderr)
			}
		})
	}
	t.Run("conflict is silent without -v", func(t *testing.T) {
		r := locksmith(t, nil, flag, "run", "-n", "taken", "--", "true")
		if r.stdout != "" || r.stderr != "" {
			t.Errorf("a conflict wrote stdout %q, stderr %q; want nothing", r.stdout, r.stderr)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"lost", nil, exitLost},
		{"lost, --lost-exit-code", []string{"--lost-exit-code", "80"}, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The key is deleted under the running command: the next
			// renewal finds it gone.
			dir := t.TempDir()
			args := append([]string{flag, "run", "--ttl", "1s"}, tc.args...)
			args = append(args, "gone", "--", "sh", "-c", `touch "$DIR/ready"; while :; do sleep 0.05; done`)
			p := start(t, []string{"DIR=" + dir}, args...)
			awaitFile(t, p, filepath.Join(dir, "ready"))
			for _, s := range servers {
				rdb(t, s).Del(ctx, "gone")
			}
			if code := p.wait(t); code != tc.want {
				t.Errorf("exit code %d; want %d; stderr: %s", code, tc.want, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "sending SIGTERM") {
				t.Errorf("stderr does not report the signal: %s", p.stderr.String())
			}
		})
	}
	t.Run("max-hold", func(t *testing.T) {
		r := locksmith(t, nil, flag, "run", "--ttl", "2s", "--max-hold", "500ms", "held", "--", "sleep", "30")
		if r.code != exitLost {
			t.Errorf("exit code %d; want %d; stderr: %s", r.code, exitLost, r.stderr)
		}
		if !strings.Contains(r.stderr, "held for --max-hold") {
			t.Errorf("stderr does not name --max-hold: %s", r.stderr)
		}
	})
	t.Run("signal while waiting", func(t *testing.T) {
		p := start(t, nil, flag, "run", "-v", "--progress-every", "20ms", "taken", "--", "true")
		awaitStderr(t, p, "waiting for \"taken\"")
		p.cmd.Process.Signal(syscall.SIGINT)
		if code := p.wait(t); code != 128+int(syscall.SIGINT) {
			t.Errorf("exit code %d; want %d; stderr: %s", code, 128+int(syscall.SIGINT), p.stderr.String())
		}
	})
}

// TestSignalForwarding sends signals to locksmith while the command runs:
// the command gets them, its exit code comes through, and the lock is
// released.
func TestSignalForwarding(t *testing.T) {
	servers, flag := nodes(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT} {
		t.Run(signalName(sig), func(t *testing.T) {
			dir := t.TempDir()
			name := strings.TrimPrefix(signalName(sig), "SIG")
			script := `trap 'echo ` + name + ` > "$DIR/got"; exit 7' ` + name + `
touch "$DIR/ready"
while :; do sleep 0.05; done`
			p := start(t, []string{"DIR=" + dir}, flag, "run", "fwd", "--", "sh", "-c", script)
			awaitFile(t, p, filepath.Join(dir, "ready"))
			p.cmd.Process.Signal(sig)
			if code := p.wait(t); code != 7 {
				t.Errorf("exit code %d; want the command's 7; stderr: %s", code, p.stderr.String())
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "got")); strings.TrimSpace(string(got)) != name {
				t.Errorf("the command recorded %q; want %s", got, name)
			}
			if n := holders(t, servers, "fwd"); n != 0 {
				t.Errorf("%d nodes still hold the key; want 0", n)
			}
		})
	}
}

func TestMinHold(t *testing.T) {
	servers, flag := nodes(t, 3)
	if r := locksmith(t, nil, flag, "run", "plain", "--", "true"); r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	if n := holders(t, servers, "plain"); n != 0 {
		t.Errorf("without --min-hold, %d nodes still hold the key; want 0", n)
	}
	if r := locksmith(t, nil, flag, "run", "--min-hold", "1m", "periodic", "--", "true"); r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	for i, s := range servers {
		ttl, err := rdb(t, s).PTTL(context.Background(), "periodic").Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > time.Minute {
			t.Errorf("node %d: PTTL %v after a run with --min-hold 1m; want in (0, 1m]", i, ttl)
		}
	}
	if r := locksmith(t, nil, flag, "run", "-n", "periodic", "--", "true"); r.code != exitConflict {
		t.Errorf("a second run within --min-hold exited %d; want %d", r.code, exitConflict)
	}
}

func TestEnvironment(t *testing.T) {
	_, flag := nodes(t, 3)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	outer := []string{"DIR=" + dir, "LOCKSMITH_VALUE=outer", "LOCKSMITH_TOKEN=99"}
	r := locksmith(t, outer, flag, "run", "--fencing", "envkey", "--", "sh", "-c", `env > "$DIR/env"`)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	env := readEnv(t, envFile)
	if env["LOCKSMITH_KEY"] != "envkey" || env["LOCKSMITH_TOKEN"] != "1" {
		t.Errorf("LOCKSMITH_KEY %q, LOCKSMITH_TOKEN %q; want envkey, 1", env["LOCKSMITH_KEY"], env["LOCKSMITH_TOKEN"])
	}
	if _, err := time.Parse(time.RFC3339, env["LOCKSMITH_DEADLINE"]); err != nil {
		t.Errorf("LOCKSMITH_DEADLINE %q: %v", env["LOCKSMITH_DEADLINE"], err)
	}
	if v, ok := env["LOCKSMITH_VALUE"]; ok {
		t.Errorf("LOCKSMITH_VALUE %q passed without --export-value", v)
	}

	r = locksmith(t, []string{"DIR=" + dir}, flag, "run", "--export-value", "envkey", "--", "sh", "-c", `env > "$DIR/env"`)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	env = readEnv(t, envFile)
	if len(env["LOCKSMITH_VALUE"]) < 16 {
		t.Errorf("LOCKSMITH_VALUE %q with --export-value; want the lock's value", env["LOCKSMITH_VALUE"])
	}
	if v, ok := env["LOCKSMITH_TOKEN"]; ok {
		t.Errorf("LOCKSMITH_TOKEN %q passed without --fencing", v)
	}
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := make(map[string]string)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}
