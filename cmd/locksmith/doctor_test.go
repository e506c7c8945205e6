package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// doctor runs locksmith doctor --json on urls with a short clock sample.
func doctor(t *testing.T, env []string, urls []string, extra ...string) (doctorReport, int) {
	t.Helper()
	args := append([]string{"--nodes=" + strings.Join(urls, ","), "doctor", "--json", "--clock-sample", "100ms"}, extra...)
	r := locksmith(t, env, args...)
	var report doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("doctor --json (exit %d): %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	return report, r.code
}

// find returns the finding of check on node.
func find(t *testing.T, report doctorReport, node, check string) finding {
	t.Helper()
	for _, f := range report.Checks {
		if f.Node == node && f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s check for %s in %+v", check, node, report.Checks)
	return finding{}
}

func urlsOf(servers ...*testServer) []string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL())
	}
	return urls
}

func TestDoctorHealthy(t *testing.T) {
	servers, _ := nodes(t, 3)
	report, code := doctor(t, nil, urlsOf(servers...))
	if code != 0 || report.Errors != 0 || report.Warnings != 0 {
		t.Errorf("doctor on healthy nodes: exit %d, %d errors, %d warnings; want 0, 0, 0: %+v", code, report.Errors, report.Warnings, report.Checks)
	}
	for _, s := range servers {
		for _, check := range []string{"reachable", "role", "eviction", "persistence", "permissions", "hand-off", "clock"} {
			if f := find(t, report, s.Addr(), check); f.Status != statusOK {
				t.Errorf("%s %s: %+v; want ok", s.Addr(), check, f)
			}
		}
	}
	if f := find(t, report, "(all)", "nodes"); f.Status != statusOK {
		t.Errorf("nodes: %+v; want ok", f)
	}
}

// TestDoctorFlags starts, for each unsafe setting, two healthy nodes and
// one with the setting, and checks that doctor flags that node's check and
// exits as the finding's severity says.
func TestDoctorFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		directives []string
		check      string
		status     string
		detail     string
		extra      []string
	}{
		{"allkeys-lru", []string{"maxmemory 100mb", "maxmemory-policy allkeys-lru"}, "eviction", statusError, "may evict lock keys", nil},
		{"appendonly no", []string{"appendonly no"}, "persistence", statusWarning, "restart a crashed node only after the longest TTL", nil},
		{"appendonly no, fencing", []string{"appendonly no"}, "persistence", statusError, "appendonly no", []string{"--fencing"}},
		{"appendfsync everysec", []string{"appendfsync everysec"}, "persistence", statusWarning, "appendfsync everysec", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			odd := startServer(t, tc.directives...)
			report, code := doctor(t, nil, urlsOf(startServer(t), startServer(t), odd), tc.extra...)
			f := find(t, report, odd.Addr(), tc.check)
			if f.Status != tc.status || !strings.Contains(f.Detail, tc.detail) {
				t.Errorf("%s: %+v; want %s mentioning %q", tc.check, f, tc.status, tc.detail)
			}
			if want := map[string]int{statusError: exitUnsafe, statusWarning: 0}[tc.status]; code != want {
				t.Errorf("exit code %d; want %d", code, want)
			}
		})
	}

	t.Run("replica", func(t *testing.T) {
		master := startServer(t)
		replica := startServer(t, "replicaof 127.0.0.1 "+itoa(master.Port()))
		// The master counts the replica once it has connected.
		deadline := time.Now().Add(testTimeout)
		mc := rdb(t, master)
		for {
			info, err := mc.Info(t.Context(), "replication").Result()
			if err == nil && strings.Contains(info, "connected_slaves:1") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the replica did not connect: %v %s", err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		report, code := doctor(t, nil, urlsOf(master, replica, startServer(t)))
		if f := find(t, report, master.Addr(), "role"); f.Status != statusWarning || !strings.Contains(f.Detail, "1 replica(s)") {
			t.Errorf("master role: %+v; want a warning about its replica", f)
		}
		if f := find(t, report, replica.Addr(), "role"); f.Status != statusError || !strings.Contains(f.Detail, "replica of "+master.Addr()) {
			t.Errorf("replica role: %+v; want an error naming its master", f)
		}
		if code != exitUnsafe {
			t.Errorf("exit code %d; want %d", code, exitUnsafe)
		}
	})

	t.Run("ACL user without EVALSHA", func(t *testing.T) {
		acl := "user locker on >locker-pw ~* &* resetchannels &* -@all +eval +script|load +get +set +pexpire +del +exists +publish +subscribe +unsubscribe"
		odd := startServer(t, acl)
		urls := append(urlsOf(startServer(t), startServer(t)), "redis://locker@"+odd.Addr())
		report, code := doctor(t, []string{"LOCKSMITH_PASSWORD=locker-pw"}, urls)
		if f := find(t, report, odd.Addr(), "permissions"); f.Status != statusError || !strings.Contains(f.Detail, "EVALSHA: NOPERM") {
			t.Errorf("permissions: %+v; want an error on EVALSHA", f)
		}
		if f := find(t, report, odd.Addr(), "reachable"); f.Status != statusOK {
			t.Errorf("reachable: %+v; want ok: a refused PING still answers", f)
		}
		if code != exitUnsafe {
			t.Errorf("exit code %d; want %d", code, exitUnsafe)
		}
		// The scratch key is gone: no key is left on the node.
		if n, err := rdb(t, odd).DBSize(t.Context()).Result(); err != nil || n != 0 {
			t.Errorf("DBSIZE after doctor: %d, %v; want 0", n, err)
		}
	})

	t.Run("two URLs, one server", func(t *testing.T) {
		s := startServer(t)
		report, code := doctor(t, nil, []string{s.URL() + "/0", s.URL() + "/1", startServer(t).URL()})
		var dup *finding
		for _, f := range report.Checks {
			if f.Check == "nodes" && f.Status == statusError {
				dup = &f
			}
		}
		if dup == nil || !strings.Contains(dup.Detail, s.Addr()+" and "+s.Addr()+"/1 are one server") {
			t.Errorf("no error for two URLs of one server: %+v", report.Checks)
		}
		if code != exitUnsafe {
			t.Errorf("exit code %d; want %d", code, exitUnsafe)
		}
	})

	t.Run("even count", func(t *testing.T) {
		report, code := doctor(t, nil, urlsOf(startServer(t), startServer(t)))
		if f := find(t, report, "(all)", "nodes"); f.Status != statusWarning {
			t.Errorf("2 nodes: %+v; want a warning", f)
		}
		if code != 0 {
			t.Errorf("exit code %d; want 0 for warnings alone", code)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		report, code := doctor(t, nil, append(urlsOf(startServer(t), startServer(t)), "redis://127.0.0.1:1"))
		if f := find(t, report, "127.0.0.1:1", "reachable"); f.Status != statusError {
			t.Errorf("reachable: %+v; want an error", f)
		}
		if code != exitUnsafe {
			t.Errorf("exit code %d; want %d", code, exitUnsafe)
		}
	})
}

func TestDoctorTable(t *testing.T) {
	servers, flag := nodes(t, 3)
	r := locksmith(t, nil, flag, "doctor", "--clock-sample", "100ms")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "NODE") || !strings.Contains(r.stdout, servers[0].Addr()) || !strings.HasSuffix(r.stdout, "0 error(s), 0 warning(s)\n") {
		t.Errorf("doctor table:\n%s", r.stdout)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
