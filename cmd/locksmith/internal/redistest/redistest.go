// Package redistest starts redis-server processes on free loopback ports
// for the tests of the locksmith command.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process listening on 127.0.0.1.
type Server struct {
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Pause stops the process with SIGSTOP; Resume continues it.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: SIGSTOP: %v", err)
	}
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("redistest: SIGCONT: %v", err)
	}
}

// Log returns what the server has logged.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// Skip skips t when redis-server is not on PATH.
func Skip(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make deps installs it)")
	}
}

// Defaults are the directives every server starts with, before those given
// to Start: the persistence and eviction settings Redlock wants, so that a
// server is healthy unless a test says otherwise.
var Defaults = []string{
	"bind 127.0.0.1",
	"save \"\"",
	"appendonly yes",
	"appendfsync always",
	"maxmemory-policy noeviction",
	"daemonize no",
	"logfile \"\"",
}

// readyLine is what redis-server logs once it holds its listening socket.
const readyLine = "Ready to accept connections"

// Start starts a server with Defaults followed by directives, each a line
// of redis.conf (a later line wins), and stops it when t ends. It skips t
// when redis-server is not installed.
func Start(t testing.TB, directives ...string) *Server {
	t.Helper()
	Skip(t)
	var lastErr error
	for range 3 {
		s, err := start(t.TempDir(), directives)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

func start(dir string, directives []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := append([]string{"port " + strconv.Itoa(port), "dir " + dir}, Defaults...)
	conf = append(conf, directives...)
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s := &Server{Port: port, dir: dir, cmd: exec.Command("redis-server", confPath), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	deadline := time.After(20 * time.Second) // only to end a hang
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(s.Log(), readyLine) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server exited at start-up: %s", lastLines(s.Log()))
		case <-deadline:
			s.stop()
			return nil, errors.New("redis-server did not become ready")
		case <-tick.C:
		}
	}
	return s, nil
}

func (s *Server) stop() {
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Kill()
	<-s.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}
