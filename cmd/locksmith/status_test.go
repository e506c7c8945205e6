package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

func statusJSON(t *testing.T, flag, key string) (statusReport, result) {
	t.Helper()
	r := locksmith(t, nil, flag, "status", "--json", key)
	if r.code != 0 {
		t.Fatalf("status exited %d; stderr: %s", r.code, r.stderr)
	}
	var report statusReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("status --json: %v: %s", err, r.stdout)
	}
	if len(report.Keys) != 1 || len(report.Keys[0].Nodes) != 3 {
		t.Fatalf("status --json: %+v; want one key on 3 nodes", report)
	}
	return report, r
}

// TestStatusAroundRun reads a key's status before, during and after a run.
func TestStatusAroundRun(t *testing.T) {
	_, flag := nodes(t, 3)
	before, _ := statusJSON(t, flag, "job")
	if k := before.Keys[0]; k.Held || k.Holders != 0 || k.Nodes[0].Exists {
		t.Errorf("before the run: %+v; want not held", k)
	}

	dir := t.TempDir()
	const script = `echo "$LOCKSMITH_VALUE" > "$DIR/value"
touch "$DIR/ready"
while [ ! -e "$DIR/stop" ]; do sleep 0.02; done`
	p := start(t, []string{"DIR=" + dir}, flag, "run", "--fencing", "--export-value", "--ttl", "1m", "job", "--", "sh", "-c", script)
	awaitFile(t, p, filepath.Join(dir, "ready"))
	b, err := os.ReadFile(filepath.Join(dir, "value"))
	if err != nil {
		t.Fatal(err)
	}
	value := strings.TrimSpace(string(b))
	during, r := statusJSON(t, flag, "job")
	k := during.Keys[0]
	if !k.Held || k.Holders != 3 || k.Quorum != 2 || k.Value != value[:4]+"…" {
		t.Errorf("during the run: held %v, holders %d, quorum %d, value %q; want true, 3, 2, %q", k.Held, k.Holders, k.Quorum, k.Value, value[:4]+"…")
	}
	if _, err := time.Parse(time.RFC3339, k.HeldUntil); err != nil {
		t.Errorf("held_until %q: %v", k.HeldUntil, err)
	}
	for _, n := range k.Nodes {
		if !n.Exists || n.TTLMilli <= 0 || n.TTLMilli > 60000 || n.Counter == nil || *n.Counter != 1 {
			t.Errorf("node %s: %+v; want the key with a TTL up to 1m and counter 1", n.Node, n)
		}
	}
	table := locksmith(t, nil, flag, "status", "job")
	for _, out := range []string{r.stdout, table.stdout} {
		if strings.Contains(out, value) {
			t.Errorf("status shows the whole lock value: %s", out)
		}
	}
	if !strings.Contains(table.stdout, "job: held by a quorum (3 of 3 nodes, quorum 2) until") {
		t.Errorf("status table: %s", table.stdout)
	}

	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("run exited %d; stderr: %s", code, p.stderr.String())
	}
	after, _ := statusJSON(t, flag, "job")
	if k := after.Keys[0]; k.Held || k.Nodes[0].Exists || k.Nodes[0].Counter == nil || *k.Nodes[0].Counter != 1 {
		t.Errorf("after the run: %+v; want not held, the fencing counter kept", k)
	}
}

func TestStatusWithoutQuorum(t *testing.T) {
	servers, _ := nodes(t, 1)
	flag := "--nodes=" + servers[0].URL() + ",redis://127.0.0.1:1,redis://127.0.0.1:2"
	r := locksmith(t, nil, flag, "status", "k")
	if r.code != exitError {
		t.Errorf("status with 1 of 3 nodes up exited %d; want %d", r.code, exitError)
	}
	if !strings.Contains(r.stdout, "k: unknown: only 1 of 3 nodes answered") {
		t.Errorf("status: %s", r.stdout)
	}
	r = locksmith(t, nil, flag, "status", "--limit", "2", "k")
	if r.code != exitError {
		t.Errorf("status --limit with 1 of 3 nodes up exited %d; want %d", r.code, exitError)
	}
	if !strings.Contains(r.stdout, "k: unknown: only 1 of 3 nodes answered") || strings.Count(r.stdout, "error: ") != 2 {
		t.Errorf("status --limit: %s; want 2 nodes in error and the semaphore unknown", r.stdout)
	}
}

// TestStatusElection reads an election's leader before, during and after
// a leadership.
func TestStatusElection(t *testing.T) {
	servers, flag := nodes(t, 3)
	var conns []driver.Conn
	for _, s := range servers {
		conns = append(conns, goredis.New(rdb(t, s)))
	}
	client, err := redlock.New(conns)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	e, err := client.Election("sched", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	read := func() (leaderStatus, string) {
		t.Helper()
		return leaderJSON(t, flag, "sched"), locksmith(t, nil, flag, "status", "--election", "sched").stdout
	}
	if l, table := read(); l.Term != 0 || !strings.Contains(table, "sched: no leader") {
		t.Errorf("before a campaign: %+v, %s; want no leader", l, table)
	}
	l, err := e.Campaign(context.Background(), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	got, table := read()
	if got.Identity != "host-a" || got.Term != l.Term() || got.HeldUntil == "" {
		t.Errorf("during the leadership: %+v; want host-a with term %d", got, l.Term())
	}
	if want := fmt.Sprintf("sched: leader \"host-a\", term %d, until", l.Term()); !strings.Contains(table, want) {
		t.Errorf("status table: %s; want %q", table, want)
	}
	if err := l.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l, _ := read(); l.Term != 0 {
		t.Errorf("after Resign: %+v; want no leader", l)
	}
	if r := locksmith(t, nil, flag, "status", "--election", "--limit", "2", "sched"); r.code != exitUsage {
		t.Errorf("status --election --limit exited %d; want %d", r.code, exitUsage)
	}
}
