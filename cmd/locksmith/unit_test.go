package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClockVerdict(t *testing.T) {
	for _, tc := range []struct {
		name          string
		server, local time.Duration
		slack         time.Duration
		want          string
	}{
		{"same rate", time.Second, time.Second, time.Millisecond, statusOK},
		{"fast within the factor", 1005 * time.Millisecond, time.Second, 0, statusOK},
		{"fast beyond the factor", 1020 * time.Millisecond, time.Second, 0, statusError},
		{"slow beyond the factor", 980 * time.Millisecond, time.Second, 0, statusError},
		{"beyond the factor but within the round trips", 1020 * time.Millisecond, time.Second, 15 * time.Millisecond, statusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail := clockVerdict(tc.server, tc.local, tc.slack, 0.01)
			if got != tc.want {
				t.Errorf("clockVerdict(%v, %v, %v, 0.01) = %s (%s); want %s", tc.server, tc.local, tc.slack, got, detail, tc.want)
			}
		})
	}
}

func TestParseNodeURL(t *testing.T) {
	for _, tc := range []struct {
		url, name, err string
	}{
		{"redis://10.0.0.1:6380", "10.0.0.1:6380", ""},
		{"redis://10.0.0.1", "10.0.0.1:6379", ""},
		{"rediss://user:pw@r1.example:6380/2", "r1.example:6380/2", ""},
		{"http://10.0.0.1:6379", "", `URL scheme "http"`},
		{"unix:///tmp/redis.sock", "", `URL scheme "unix"`},
		{"redis://u:pw@10.0.0.1:x", "", "invalid URL"},
		{"redis://10.0.0.1:6379/a", "", "invalid database number"},
		{"10.0.0.1:6379", "", "not a URL: write redis://host:port"},
		{"localhost:6379", "", "not a URL: write redis://host:port"},
		{"u:pw@10.0.0.1:6379", "", "not a URL"},
	} {
		var secrets []string
		opts, name, err := parseNodeURL(tc.url, &secrets)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseNodeURL(%q): error %v; want one containing %q", tc.url, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("parseNodeURL(%q): %v", tc.url, err)
		case tc.err == "" && name != tc.name:
			t.Errorf("parseNodeURL(%q): name %q; want %q", tc.url, name, tc.name)
		case tc.err == "" && strings.HasPrefix(tc.url, "rediss:") && opts.TLSConfig == nil:
			t.Errorf("parseNodeURL(%q): no TLS", tc.url)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("parseNodeURL(%q): error %q shows the password", tc.url, err)
		}
		if strings.Contains(tc.url, ":pw@") && !contains(secrets, "pw") {
			t.Errorf("parseNodeURL(%q): secrets %q lack the password", tc.url, secrets)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestScrub(t *testing.T) {
	got := scrub("auth hunter2 failed; hunter2", []string{"", "hunter2"})
	if got != "auth xxxxx failed; xxxxx" {
		t.Errorf("scrub = %q", got)
	}
}

func TestSignalValue(t *testing.T) {
	var sig syscall.Signal
	v := signalValue{&sig}
	for in, want := range map[string]syscall.Signal{"TERM": syscall.SIGTERM, "sigint": syscall.SIGINT, "USR1": syscall.SIGUSR1, "9": syscall.SIGKILL} {
		if err := v.Set(in); err != nil || sig != want {
			t.Errorf("Set(%q): %v, %v; want %v", in, sig, err, want)
		}
	}
	for _, in := range []string{"", "TERMINATE", "0", "-3", "99"} {
		if err := v.Set(in); err == nil {
			t.Errorf("Set(%q) = nil; want an error", in)
		}
	}
}

// TestUsage runs the command in-process on bad command lines.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "key"},
		{"run", "-n", "--wait", "5s", "k", "--", "true"},
		{"run", "--signal", "NOPE", "k", "--", "true"},
		{"run", "--progress-every", "0s", "k", "--", "true"},
		{"run", "--limit", "0", "k", "--", "true"},
		{"run", "--limit", "1025", "k", "--", "true"},
		{"status", "--limit", "-1", "k"},
		{"status"},
		{"release", "k"},
		{"release", "k", "--value", "v", "--force"},
		{"doctor", "extra"},
		{"doctor", "--drift-factor", "1.5"},
		{"no-such-command"},
	} {
		var stdout, stderr bytes.Buffer
		if code := newApp(&stdout, &stderr).execute(args); code != exitUsage {
			t.Errorf("locksmith %q: exit %d; want %d; stderr %s", args, code, exitUsage, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("locksmith %q: nothing on stderr", args)
		}
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := newApp(&stdout, &stderr).execute([]string{"run", "--help"}); code != 0 {
		t.Fatalf("run --help: exit %d", code)
	}
	for _, want := range []string{"75", "76", "69", "64", "128+N", "--kill-after", "What cannot", "LOCKSMITH_DEADLINE", "If locksmith itself dies", "--limit", "LOCKSMITH_SLOT", "LOCKSMITH_PERMIT"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

// TestCommandLineEdges runs the command in-process on command lines that
// used to slip through: a flag after KEY, which would be run as the
// command, and no arguments at all. Without nodes, a command line that
// passes the checks ends with exitError, not exitUsage.
func TestCommandLineEdges(t *testing.T) {
	t.Setenv("LOCKSMITH_NODES", "")
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"flag after KEY", []string{"run", "job", "--shell", "echo hi"}, exitUsage,
			[]string{`"--shell" follows KEY "job"`, "flags go before KEY"}},
		{"flag after KEY, then --", []string{"run", "job", "-n", "--", "true"}, exitUsage,
			[]string{`"-n" follows KEY "job"`}},
		{"-- before KEY", []string{"run", "--", "job", "--shell", "true"}, exitUsage,
			[]string{`"--shell" follows KEY "job"`}},
		{"command starting with - after --", []string{"run", "job", "--", "-dash"}, exitError,
			[]string{"no nodes"}},
		{"no arguments", nil, exitUsage,
			[]string{"Usage:", "locksmith run [flags] KEY", "locksmith release KEY", `"locksmith help"`}},
		{"flags only", []string{"-v"}, exitUsage, []string{"Usage:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := newApp(&stdout, &stderr).execute(tc.args)
			if code != tc.wantCode {
				t.Errorf("locksmith %q: exit %d; want %d; stderr: %s", tc.args, code, tc.wantCode, stderr.String())
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("locksmith %q: stderr %q lacks %q", tc.args, stderr.String(), want)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("locksmith %q: stdout %q; want nothing", tc.args, stdout.String())
			}
		})
	}
}
