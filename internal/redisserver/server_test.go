//go:build unix

package redisserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func needServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make deps installs it)")
	}
}

// ping returns the server's answer to PING, or the error's text.
func ping(t *testing.T, addr string, tlsConfig *tls.Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w, err := resp.DialWire(ctx, addr, tlsConfig)
	if err != nil {
		return err.Error()
	}
	defer w.Close()
	reply, err := w.Do(ctx, "PING")
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(reply)
}

func TestLifecycle(t *testing.T) {
	needServer(t)
	ctx := t.Context()
	s, err := Start(ctx, Config{Dir: t.TempDir(), Directives: [][]string{{"save", ""}, {"appendonly", "no"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy(context.Background())
	if got := ping(t, s.Addr(), nil); got != "PONG" {
		t.Fatalf("PING after Start = %q, want PONG", got)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("Running() after Kill = true")
	}
	if err := s.Pause(); err == nil {
		t.Error("Pause of a killed server = nil, want an error")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ping(t, s.Addr(), nil); got != "PONG" {
		t.Errorf("PING after Restart = %q, want PONG", got)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if leaked := Leaked(); len(leaked) != 0 {
		t.Errorf("Leaked() = %q after Destroy", leaked)
	}
}

// A redis-server that cannot bind its port exits, but until it does a PING
// to the port is answered by whoever holds it. Start-up must wait for the
// server's own word that it listens, not for any answer.
func TestServerOnATakenPortIsNotReady(t *testing.T) {
	needServer(t)
	stranger, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	dir := t.TempDir()
	s := &Server{bin: "redis-server", dir: dir, conf: dir + "/redis.conf", logPath: dir + "/redis.log",
		port: stranger.Addr().(*net.TCPAddr).Port}
	if err := os.WriteFile(s.conf, []byte(Render(s.lines(Config{}))), 0o600); err != nil {
		t.Fatal(err)
	}
	err = s.Restart(t.Context())
	defer s.Destroy(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") {
		t.Fatalf("Restart on taken port %d = %v, want an error saying that redis-server exited", s.port, err)
	}
	if tail := s.LogTail(20); !strings.Contains(tail, "Address already in use") {
		t.Errorf("the log does not show the failed bind:\n%s", tail)
	}
}

func TestTLSListensWithTheCAsCertificate(t *testing.T) {
	needServer(t)
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(t.Context(), Config{Dir: t.TempDir(), TLS: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy(context.Background())
	if s.TLSAddr() == "" || s.TLSAddr() == s.Addr() {
		t.Fatalf("TLSAddr() = %q with Addr() %q, want a port of its own", s.TLSAddr(), s.Addr())
	}
	if got := ping(t, s.TLSAddr(), ca.ClientConfig()); got != "PONG" {
		t.Errorf("PING over TLS = %q, want PONG", got)
	}
}

func TestRenderQuotesArguments(t *testing.T) {
	got := Render([][]string{
		{"save", ""},
		{"requirepass", `a "b" c\d`},
		{"user", "alice", "on", ">p w", "~*"},
		{"x", "tab\there"},
	})
	want := `save ""
requirepass "a \"b\" c\\d"
user "alice" "on" ">p w" "~*"
x "tab\x09here"
`
	if got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

func TestFreePortsReservesUntilReleased(t *testing.T) {
	first, err := FreePorts(64)
	if err != nil {
		t.Fatal(err)
	}
	second, err := FreePorts(64)
	if err != nil {
		t.Fatal(err)
	}
	defer ReleasePorts(second...)
	for _, port := range second {
		if slices.Contains(first, port) {
			t.Errorf("port %d handed out twice while reserved", port)
		}
	}
	ReleasePorts(first...)
	reserved.Lock()
	defer reserved.Unlock()
	for _, port := range first {
		if reserved.m[port] {
			t.Errorf("port %d still reserved after release", port)
		}
	}
}
