package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordsNeverShown runs every command with passwords, right and
// wrong, from URLs, LOCKSMITH_PASSWORD and a file, and with URLs that fail
// to parse, and looks for the passwords in all output.
func TestPasswordsNeverShown(t *testing.T) {
	const right = "Right-Pa55word"
	s := startServer(t, "requirepass "+right)
	addr := s.Addr()
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(right+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongFile := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongFile, []byte("Wrong-File-Pa55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := []string{right, "Wrong-Url-Pa55", "Wrong-Env-Pa55", "Wrong-File-Pa55", "p@ss-Encoded", "p%40ss-Encoded", "Bad-Url-Pa55"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"run, wrong URL password", nil, []string{"--nodes", "redis://:Wrong-Url-Pa55@" + addr, "run", "-n", "k", "--", "true"}, exitError},
		{"run, wrong env password", []string{"LOCKSMITH_PASSWORD=Wrong-Env-Pa55"}, []string{"--nodes", "redis://" + addr, "-v", "run", "k", "--", "true"}, exitError},
		{"status, wrong file password", nil, []string{"--nodes", "redis://" + addr, "--password-file", wrongFile, "status", "k"}, exitError},
		{"status, encoded password", nil, []string{"--nodes", "redis://u:p%40ss-Encoded@" + addr, "status", "--json", "k"}, exitError},
		{"doctor, wrong password", nil, []string{"--nodes", "redis://default:Wrong-Url-Pa55@" + addr, "doctor", "--clock-sample", "10ms"}, exitUnsafe},
		{"release, wrong password", nil, []string{"--nodes", "redis://:Wrong-Url-Pa55@" + addr, "release", "k", "--force", "--confirm", "k"}, exitError},
		{"URL with a bad port", nil, []string{"--nodes", "redis://user:Bad-Url-Pa55@" + addr + "x", "status", "k"}, exitError},
		{"URL with a bad scheme", nil, []string{"--nodes", "http://user:Bad-Url-Pa55@" + addr, "status", "k"}, exitError},
		{"URL with a bad database", nil, []string{"--nodes", "redis://user:Bad-Url-Pa55@" + addr + "/x", "status", "k"}, exitError},
		{"URL with a bad escape", nil, []string{"--nodes", "redis://user:Bad-Url-Pa55%zz@" + addr, "status", "k"}, exitError},
		{"TLS flag on redis://", nil, []string{"--nodes", "redis://user:Bad-Url-Pa55@" + addr, "--tls-server-name", "x", "status", "k"}, exitError},
		{"right password in the URL", nil, []string{"--nodes", "redis://:" + right + "@" + addr, "-v", "run", "k", "--", "true"}, 0},
		{"right password in a file", nil, []string{"--nodes", "redis://" + addr, "--password-file", file, "doctor", "--clock-sample", "10ms"}, 0},
		{"right password in env", []string{"LOCKSMITH_PASSWORD=" + right}, []string{"--nodes", "redis://" + addr, "status", "k"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := locksmith(t, tc.env, tc.args...)
			if r.code != tc.want {
				t.Errorf("exit code %d; want %d; stdout %s; stderr %s", r.code, tc.want, r.stdout, r.stderr)
			}
			if r.stdout+r.stderr == "" {
				t.Errorf("no output; want some to search")
			}
			for _, secret := range secrets {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("output shows password %q:\nstdout: %s\nstderr: %s", secret, r.stdout, r.stderr)
				}
			}
		})
	}
}
