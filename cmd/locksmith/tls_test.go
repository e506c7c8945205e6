package main

import (
	"strings"
	"testing"
)

func TestTLS(t *testing.T) {
	s := startTLSServer(t)
	nodes := "--nodes=" + s.TLSURL()
	for _, tc := range []struct {
		name string
		args []string
		want int
		says string
	}{
		{"trusted CA", []string{nodes, "--tls-ca", s.CAFile, "status", "k"}, 0, "k: not held by a quorum"},
		{"trusted CA, name given", []string{nodes, "--tls-ca", s.CAFile, "--tls-server-name", "localhost", "run", "-n", "k", "--", "true"}, 0, ""},
		{"unknown CA", []string{nodes, "status", "k"}, exitError, "certificate"},
		{"wrong server name", []string{nodes, "--tls-ca", s.CAFile, "--tls-server-name", "other.example", "status", "k"}, exitError, "certificate"},
		{"TLS flags on redis://", []string{"--nodes=" + s.URL(), "--tls-ca", s.CAFile, "status", "k"}, exitError, "use rediss://"},
		{"missing CA file", []string{nodes, "--tls-ca", s.CAFile + ".missing", "status", "k"}, exitError, "--tls-ca"},
		{"cert without key", []string{nodes, "--tls-cert", s.CAFile, "status", "k"}, exitError, "--tls-cert and --tls-key go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := locksmith(t, nil, tc.args...)
			if r.code != tc.want || !strings.Contains(r.stdout+r.stderr, tc.says) {
				t.Errorf("exit code %d, output %q %q; want %d mentioning %q", r.code, r.stdout, r.stderr, tc.want, tc.says)
			}
		})
	}
}
