package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// testServer is a redis-server process on 127.0.0.1 for the command's
// tests, started with internal/redisserver.
type testServer struct {
	*redisserver.Server
	// CAFile is the PEM file of the CA that signed the TLS certificate, ""
	// without TLS.
	CAFile string
}

// URL returns the server's redis:// URL.
func (s *testServer) URL() string { return "redis://" + s.Addr() }

// TLSURL returns the server's rediss:// URL.
func (s *testServer) TLSURL() string { return "rediss://" + s.TLSAddr() }

// Pause stops the process with SIGSTOP; Resume continues it.
func (s *testServer) Pause(t testing.TB) {
	t.Helper()
	if err := s.Server.Pause(); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a paused process with SIGCONT.
func (s *testServer) Resume(t testing.TB) {
	t.Helper()
	if err := s.Server.Resume(); err != nil {
		t.Fatal(err)
	}
}

// serverDefaults are the directives every server starts with, before those
// given to startServer: the persistence and eviction settings Redlock
// wants, so that a server is healthy unless a test says otherwise.
var serverDefaults = [][]string{
	{"save", ""},
	{"appendonly", "yes"},
	{"appendfsync", "always"},
	{"maxmemory-policy", "noeviction"},
}

// startServer starts a server with serverDefaults followed by directives,
// each a line of redis.conf (a later line wins), and stops it when t ends.
// It skips t when redis-server is not installed.
func startServer(t testing.TB, directives ...string) *testServer {
	t.Helper()
	return startWith(t, nil, directives)
}

// startTLSServer starts a server as startServer does, with TLS on a second
// port and a certificate for 127.0.0.1 and "localhost".
func startTLSServer(t testing.TB, directives ...string) *testServer {
	t.Helper()
	ca, err := redisserver.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return startWith(t, ca, directives)
}

func startWith(t testing.TB, ca *redisserver.CA, directives []string) *testServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make deps installs it)")
	}
	cfg := redisserver.Config{Dir: t.TempDir(), TLS: ca, Directives: serverDefaults}
	for _, d := range directives {
		cfg.Directives = append(cfg.Directives, strings.Fields(d))
	}
	s, err := redisserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Destroy(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ts := &testServer{Server: s}
	if ca != nil {
		ts.CAFile = filepath.Join(cfg.Dir, "ca.pem")
		if err := os.WriteFile(ts.CAFile, ca.CertPEM(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}
