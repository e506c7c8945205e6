// Package redisproc starts throwaway redis-server processes on free loopback
// ports for the benchmarks and stops them again.
//
// Each server persists nothing (save "" and appendonly no), binds
// 127.0.0.1 only and is killed by the kernel if the process that started it
// dies without calling [Server.Stop].
package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyTimeout bounds how long a server may take to answer its first PING.
const readyTimeout = 10 * time.Second

// portAttempts bounds the retries when a free port picked by the kernel is
// taken by someone else before redis-server binds it.
const portAttempts = 3

// Server is one running redis-server process.
type Server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Start starts n servers with the redis-server found on PATH. On error the
// servers already started are stopped.
func Start(ctx context.Context, n int) ([]*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redisproc: redis-server is not on PATH (apt-get install redis-server): %w", err)
	}
	servers := make([]*Server, 0, n)
	for range n {
		s, err := start(ctx, bin)
		if err != nil {
			StopAll(servers)
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// StopAll stops every server in servers and returns their errors joined.
func StopAll(servers []*Server) error {
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}

func start(ctx context.Context, bin string) (*Server, error) {
	var lastErr error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := launch(bin, port)
		if err != nil {
			return nil, err
		}
		lastErr = s.waitReady(ctx)
		if lastErr == nil {
			return s, nil
		}
		_ = s.Stop()
	}
	return nil, fmt.Errorf("redisproc: no server started after %d attempts: %w", portAttempts, lastErr)
}

func launch(bin string, port int) (*Server, error) {
	dir, err := os.MkdirTemp("", "locksmith-bench-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
	)
	// The log goes nowhere: a failed start shows as a server that never
	// answers, and the port is retried.
	cmd.Stdout, cmd.Stderr = nil, nil
	// Should the benchmark binary die without stopping the server, the
	// kernel kills the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: starting %s: %w", bin, err)
	}
	s := &Server{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  dir,
		cmd:  cmd,
		done: make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait() // a killed server exits with a signal status
		close(s.done)
	}()
	return s, nil
}

// waitReady polls the server with PING until it answers PONG, exits, or
// readyTimeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := ping(ctx, s.addr)
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server on %s exited during start-up (%v)", s.addr, err)
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s did not answer PING: %w", s.addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Pause stops the server with SIGSTOP: it keeps its port and the kernel
// keeps accepting connections into its backlog, but nothing is answered
// until [Server.Resume]. A paused server can still be stopped.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	select {
	case <-s.done:
		return fmt.Errorf("redisproc: redis-server on %s has exited", s.addr)
	default:
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redisproc: %v to redis-server on %s: %w", sig, s.addr, err)
	}
	return nil
}

// Stop kills the server, waits for it to exit and removes its directory.
// It may be called more than once.
func (s *Server) Stop() error {
	select {
	case <-s.done:
	default:
		// Nothing on disk is worth a graceful shutdown.
		_ = s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(readyTimeout):
			return fmt.Errorf("redisproc: redis-server on %s (pid %d) did not exit after SIGKILL", s.addr, s.cmd.Process.Pid)
		}
	}
	return os.RemoveAll(s.dir)
}

// freePort asks the kernel for a free loopback port. It is released before
// redis-server binds it, so the caller retries if another process takes it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
