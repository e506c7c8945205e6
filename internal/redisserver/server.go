//go:build unix

// Package redisserver starts redis-server processes on free loopback ports
// for the tests and benchmarks of every locksmith module (bench, cmd,
// integration), and stops, pauses and restarts them. It uses the standard
// library only.
//
// A server runs in a directory of the caller's, which holds its redis.conf,
// its log (redis.log) and its data. It counts as started once it has logged
// that it accepts connections: an answer to PING would not prove it, since
// when another program holds the port this process exits while the other
// answers.
package redisserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds how long a server may take to log that it
	// accepts connections.
	readyTimeout = 30 * time.Second
	// pollInterval is how often the log is read while waiting.
	pollInterval = 20 * time.Millisecond
	// portAttempts bounds the retries when a free port picked by the
	// kernel was taken by another program before redis-server bound it.
	portAttempts = 3
	// readyLine starts the line redis-server logs once its listening
	// sockets are bound ("Ready to accept connections", followed by "tcp"
	// on 7.2 and later). It needs loglevel notice or a more verbose one.
	readyLine = "Ready to accept connections"
)

// Config describes one server.
type Config struct {
	// Bin is the redis-server binary; "" means redis-server on PATH.
	Bin string
	// Dir holds redis.conf, redis.log, the data and, with TLS, the
	// certificates. It must exist; the caller removes it.
	Dir string
	// TLS, when set, makes the server also listen for TLS on a port of
	// its own, with a certificate that TLS issues for the loopback
	// addresses; clients need no certificate.
	TLS *CA
	// ClusterBus gives the server a cluster bus port (cluster-port), for
	// a server started with cluster-enabled yes among its Directives.
	ClusterBus bool
	// Directives are lines of redis.conf written after the server's own
	// (port, bind 127.0.0.1, dir, daemonize no, logging to redis.log), a
	// directive and its arguments each; a later line wins. Arguments are
	// quoted, so that empty ones survive (save "").
	Directives [][]string
}

// Server is one redis-server process on 127.0.0.1. It keeps its ports,
// directory and redis.conf across Stop and Restart. Its methods may be
// called from any goroutine; lifecycle calls must not overlap.
type Server struct {
	bin, dir, conf, logPath string
	port, tlsPort, busPort  int
	ports                   []int // reserved until Destroy

	mu        sync.Mutex
	cmd       *exec.Cmd
	done      chan struct{} // closed once cmd has been waited for
	logOffset int64         // size of the log when cmd started
}

// Start writes the server's redis.conf, starts it and waits until it
// accepts connections, or ctx or readyTimeout ends. Should another program
// take one of its ports first, it tries again on others. On error nothing
// is left running.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	bin := cfg.Bin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("redisserver: redis-server is not on PATH (apt-get install redis-server): %w", err)
		}
	}
	s := &Server{bin: bin, dir: cfg.Dir, conf: filepath.Join(cfg.Dir, "redis.conf"), logPath: filepath.Join(cfg.Dir, "redis.log")}
	if cfg.TLS != nil {
		cert, err := cfg.TLS.Issue()
		if err != nil {
			return nil, err
		}
		for name, data := range map[string][]byte{"ca.crt": cfg.TLS.CertPEM(), "server.crt": cert.CertPEM, "server.key": cert.KeyPEM} {
			if err := os.WriteFile(filepath.Join(cfg.Dir, name), data, 0o600); err != nil {
				return nil, err
			}
		}
	}
	var lastErr error
	for range portAttempts {
		n := 1
		if cfg.TLS != nil {
			n++
		}
		if cfg.ClusterBus {
			n++
		}
		ports, err := FreePorts(n)
		if err != nil {
			return nil, err
		}
		s.ports = ports
		s.port, s.tlsPort, s.busPort = ports[0], 0, 0
		rest := ports[1:]
		if cfg.TLS != nil {
			s.tlsPort, rest = rest[0], rest[1:]
		}
		if cfg.ClusterBus {
			s.busPort = rest[0]
		}
		if err := os.WriteFile(s.conf, []byte(Render(s.lines(cfg))), 0o600); err != nil {
			ReleasePorts(s.ports...)
			return nil, err
		}
		lastErr = s.Restart(ctx)
		if lastErr == nil {
			return s, nil
		}
		_ = s.Destroy(ctx)
		if !strings.Contains(s.LogTail(20), "Address already in use") {
			return nil, lastErr
		}
	}
	return nil, fmt.Errorf("redisserver: no free port after %d attempts: %w", portAttempts, lastErr)
}

func (s *Server) lines(cfg Config) [][]string {
	lines := [][]string{
		{"port", strconv.Itoa(s.port)},
		{"bind", "127.0.0.1"},
		{"dir", s.dir},
		{"daemonize", "no"},
		{"logfile", ""}, // stdout, which goes to redis.log
	}
	if cfg.TLS != nil {
		lines = append(lines,
			[]string{"tls-port", strconv.Itoa(s.tlsPort)},
			[]string{"tls-cert-file", filepath.Join(s.dir, "server.crt")},
			[]string{"tls-key-file", filepath.Join(s.dir, "server.key")},
			[]string{"tls-ca-cert-file", filepath.Join(s.dir, "ca.crt")},
			[]string{"tls-auth-clients", "no"},
		)
	}
	if cfg.ClusterBus {
		lines = append(lines, []string{"cluster-port", strconv.Itoa(s.busPort)})
	}
	return append(lines, cfg.Directives...)
}

// Addr returns the plain-text host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the plain-text port.
func (s *Server) Port() int { return s.port }

// TLSAddr returns the TLS host:port, or "" without TLS.
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort))
}

// BusPort returns the cluster bus port, or 0 without Config.ClusterBus.
func (s *Server) BusPort() int { return s.busPort }

// LogTail returns the last n lines the server logged, for diagnostics.
func (s *Server) LogTail(n int) string {
	data, _ := os.ReadFile(s.logPath)
	return Tail(string(data), n)
}

// Tail returns at most the last n lines of text.
func Tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Restart starts the server's process again, with the same redis.conf,
// ports and data, and waits as Start does; Start uses it for the first
// start too. The server must not be running.
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return fmt.Errorf("redisserver: redis-server on %s is running", s.Addr())
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	info, err := logFile.Stat()
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, s.conf)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	track(cmd.Process.Pid, s.Addr())
	go func() {
		_ = cmd.Wait() // an exit status is expected after a signal
		untrack(cmd.Process.Pid)
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done, s.logOffset = cmd, done, info.Size()
	s.mu.Unlock()
	return s.awaitListening(ctx)
}

// awaitListening waits until the process started last logs that it
// accepts connections, or exits.
func (s *Server) awaitListening(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	_, done := s.current()
	s.mu.Lock()
	offset := s.logOffset
	s.mu.Unlock()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if s.loggedSince(offset, readyLine) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redisserver: redis-server on %s exited during start-up: %s", s.Addr(), s.LogTail(3))
		case <-ctx.Done():
			return fmt.Errorf("redisserver: redis-server on %s did not log %q (is loglevel above notice?): %w", s.Addr(), readyLine, ctx.Err())
		case <-ticker.C:
		}
	}
}

// loggedSince reports whether the log, from byte offset on, contains text.
func (s *Server) loggedSince(offset int64, text string) bool {
	f, err := os.Open(s.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	return err == nil && strings.Contains(string(data), text)
}

func (s *Server) current() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.done
}

// Running reports whether the server's process is running (paused
// counts).
func (s *Server) Running() bool {
	cmd, done := s.current()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (s *Server) signal(sig syscall.Signal) error {
	cmd, _ := s.current()
	if !s.Running() {
		return fmt.Errorf("redisserver: redis-server on %s is not running", s.Addr())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redisserver: %v to redis-server on %s: %w", sig, s.Addr(), err)
	}
	return nil
}

// waitExit waits for the process to exit; past ctx it is killed.
func (s *Server) waitExit(ctx context.Context) error {
	cmd, done := s.current()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redisserver: redis-server (pid %d) did not exit in time and was killed: %w", cmd.Process.Pid, ctx.Err())
	}
}

// Stop ends the server with SIGTERM, as a shutdown would, and waits for it
// to exit; past ctx it is killed.
func (s *Server) Stop(ctx context.Context) error {
	if err := s.signal(syscall.SIGTERM); err != nil {
		return err
	}
	return s.waitExit(ctx)
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit.
func (s *Server) Kill(ctx context.Context) error {
	if err := s.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return s.waitExit(ctx)
}

// Pause stops the process with SIGSTOP: it keeps its ports and the kernel
// keeps accepting connections into its backlog, but nothing is answered
// until Resume. A paused server can still be killed or destroyed.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

// Destroy kills the server if it runs (paused too) and releases its ports.
// It may be called more than once; the directory stays the caller's.
func (s *Server) Destroy(ctx context.Context) error {
	defer ReleasePorts(s.ports...)
	if !s.Running() {
		return nil
	}
	cmd, _ := s.current()
	_ = cmd.Process.Kill()
	return s.waitExit(ctx)
}

// Render writes config lines in redis.conf syntax. Every argument is
// double-quoted, so empty values and values with spaces survive.
func Render(lines [][]string) string {
	var b strings.Builder
	for _, line := range lines {
		for i, arg := range line {
			switch i {
			case 0:
				b.WriteString(arg)
			default:
				b.WriteByte(' ')
				b.WriteString(quoteConfArg(arg))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// quoteConfArg quotes s the way redis.conf's parser (sdssplitargs) reads a
// double-quoted argument.
func quoteConfArg(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\' || ch == '"':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch < 0x20 || ch >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, ch)
		default:
			b.WriteByte(ch)
		}
	}
	b.WriteByte('"')
	return b.String()
}
