package redisnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NewProcessProvider returns the provider that runs each node as a
// redis-server process (found on PATH) listening on 127.0.0.1 at a free
// port, with its own directory from t.TempDir() holding redis.conf, the log
// and the data. Stop, Kill, Pause and Resume are SIGTERM, SIGKILL, SIGSTOP and
// SIGCONT.
func NewProcessProvider() Provider { return processProvider{} }

type processProvider struct{}

func (processProvider) Backend() Backend { return Process }

func (processProvider) Start(t testing.TB, n int, cfg Config) []*Node {
	t.Helper()
	requireMain(t)
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redisnode: the %s backend needs redis-server on PATH (apt-get install redis-server): %v", Process, err)
	}
	var ca *testCA
	if cfg.TLS {
		if ca, err = newTestCA(); err != nil {
			t.Fatalf("redisnode: test CA: %v", err)
		}
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	return startAll(t, Process, n, cfg, ca, func(ctx context.Context, i int) (server, error) {
		return startProcess(ctx, bin, dirs[i], cfg, ca)
	})
}

// portAttempts bounds the retries when a free port picked by the kernel was
// taken by someone else before redis-server bound it.
const portAttempts = 3

func startProcess(ctx context.Context, bin, dir string, cfg Config, ca *testCA) (server, error) {
	p := &process{bin: bin, dir: dir, conf: filepath.Join(dir, "redis.conf"), logPath: filepath.Join(dir, "redis.log")}
	if ca != nil {
		cert, err := ca.issue()
		if err != nil {
			return nil, err
		}
		for name, data := range map[string][]byte{"ca.crt": ca.certPEM, "server.crt": cert.certPEM, "server.key": cert.keyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return nil, err
			}
		}
	}
	var lastErr error
	for range portAttempts {
		n := 1
		if ca != nil {
			n++ // the TLS port
		}
		if cfg.Cluster {
			n++ // the cluster bus port
		}
		ports, err := freePorts(n)
		if err != nil {
			return nil, err
		}
		p.ports = ports
		p.port, p.tlsPort, p.busPort = ports[0], 0, 0
		rest := ports[1:]
		if ca != nil {
			p.tlsPort, rest = rest[0], rest[1:]
		}
		if cfg.Cluster {
			p.busPort = rest[0]
		}
		if err := os.WriteFile(p.conf, []byte(p.render(cfg, ca != nil)), 0o600); err != nil {
			releasePorts(p.ports...)
			return nil, err
		}
		if err := p.start(ctx); err != nil {
			releasePorts(p.ports...)
			return nil, err
		}
		lastErr = p.awaitListening(ctx)
		if lastErr == nil {
			return p, nil
		}
		if !strings.Contains(p.logTail(ctx), "Address already in use") {
			return p, lastErr
		}
		// Another program bound one of the ports between freePorts and
		// redis-server, which has exited: try other ports.
		releasePorts(p.ports...)
	}
	return nil, fmt.Errorf("no free port after %d attempts: %w", portAttempts, lastErr)
}

// readyLine starts the line redis-server logs once its listening sockets are
// bound ("Ready to accept connections", followed by "tcp" on 7.2 and later).
const readyLine = "Ready to accept connections"

// awaitListening waits until the process started last logs that it accepts
// connections, or exits. An answer to PING does not prove the server is this
// one: when another server holds the port, this process fails to bind and
// exits while the other answers. The log line does, since redis-server writes
// it only once it holds its own sockets. It needs the default log level
// (notice) or a more verbose one.
func (p *process) awaitListening(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	p.mu.Lock()
	done, offset := p.done, p.logOffset
	p.mu.Unlock()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if p.loggedSince(offset, readyLine) {
			return nil
		}
		select {
		case <-done:
			return errors.New("redis-server exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("redis-server did not log %q within %s (is loglevel above notice?): %w", readyLine, readyTimeout, ctx.Err())
		case <-ticker.C:
		}
	}
}

// loggedSince reports whether the log, from byte offset on, contains s.
func (p *process) loggedSince(offset int64, s string) bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	return err == nil && strings.Contains(string(data), s)
}

func (p *process) render(cfg Config, withTLS bool) string {
	lines := [][]string{
		{"port", strconv.Itoa(p.port)},
		{"bind", "127.0.0.1"},
		{"dir", p.dir},
		{"daemonize", "no"},
		{"logfile", ""}, // stdout, which goes to redis.log
	}
	if withTLS {
		lines = append(lines,
			[]string{"tls-port", strconv.Itoa(p.tlsPort)},
			[]string{"tls-cert-file", filepath.Join(p.dir, "server.crt")},
			[]string{"tls-key-file", filepath.Join(p.dir, "server.key")},
			[]string{"tls-ca-cert-file", filepath.Join(p.dir, "ca.crt")},
			[]string{"tls-auth-clients", "no"},
		)
	}
	if cfg.Cluster {
		lines = append(lines, []string{"cluster-port", strconv.Itoa(p.busPort)})
	}
	lines = append(lines, cfg.directives()...)
	lines = append(lines, cfg.Directives...)
	return renderConf(lines)
}

// process is one redis-server process; it is restarted in place with the
// same redis.conf, port and directory.
type process struct {
	bin, dir, conf, logPath string
	port, tlsPort, busPort  int
	ports                   []int // reserved by freePorts until destroy

	mu        sync.Mutex
	cmd       *exec.Cmd
	done      chan struct{} // closed once cmd has been waited for
	logOffset int64         // size of the log when cmd started
}

func (p *process) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

func (p *process) meetAddr() (ip, port, busPort string) {
	return "127.0.0.1", strconv.Itoa(p.port), strconv.Itoa(p.busPort)
}

func (p *process) tlsAddr() string {
	if p.tlsPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.tlsPort))
}

func (p *process) start(context.Context) error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	info, err := logFile.Stat()
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.conf)
	cmd.Dir = p.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// If the test binary dies without its cleanups, the kernel kills the
	// server with it. (The signal follows the forking OS thread; the Go
	// runtime only retires a thread whose goroutine exits while locked to
	// it, which nothing in these tests does.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.bin, err)
	}
	done := make(chan struct{})
	trackPID(cmd.Process.Pid, p.addr())
	go func() {
		_ = cmd.Wait() // an exit status is expected after a signal
		untrackPID(cmd.Process.Pid)
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done, p.logOffset = cmd, done, info.Size()
	p.mu.Unlock()
	return nil
}

func (p *process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

func (p *process) signal(sig syscall.Signal) error {
	cmd, done := p.current()
	if cmd == nil {
		return errors.New("process never started")
	}
	select {
	case <-done:
		return fmt.Errorf("redis-server (pid %d) is not running", cmd.Process.Pid)
	default:
	}
	return cmd.Process.Signal(sig)
}

// waitExit waits for the process to exit; past ctx it is killed.
func (p *process) waitExit(ctx context.Context) error {
	cmd, done := p.current()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redis-server (pid %d) did not exit in time and was killed: %w", cmd.Process.Pid, ctx.Err())
	}
}

func (p *process) stop(ctx context.Context) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	return p.waitExit(ctx)
}

func (p *process) kill(ctx context.Context) error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.waitExit(ctx)
}

func (p *process) pause(context.Context) error  { return p.signal(syscall.SIGSTOP) }
func (p *process) resume(context.Context) error { return p.signal(syscall.SIGCONT) }

// afterStart makes sure that the server that answered is this process,
// which matters after a restart too: another program may have taken the port
// while the node was down.
func (p *process) afterStart(ctx context.Context, _ *Node) error { return p.awaitListening(ctx) }

func (p *process) logTail(context.Context) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return tailLines(string(data), 20)
}

func (p *process) destroy(ctx context.Context) error {
	defer releasePorts(p.ports...)
	cmd, done := p.current()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	// SIGKILL works on a stopped (paused) process too. The directory goes
	// with t.TempDir.
	_ = cmd.Process.Kill()
	return p.waitExit(ctx)
}

// freePorts asks the kernel for n distinct free loopback ports and reserves
// them in this test binary until [releasePorts], so that servers started in
// parallel by one binary never get the same port. The kernel's listeners are
// closed before the ports are used, so a caller must still cope with losing
// one to another program.
func freePorts(n int) ([]int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close() // held until all n are picked, so they differ
		if port := l.Addr().(*net.TCPAddr).Port; !reserved.m[port] {
			ports = append(ports, port)
		}
	}
	for _, port := range ports {
		reserved.m[port] = true
	}
	return ports, nil
}

// releasePorts ends the reservation of ports made by [freePorts].
func releasePorts(ports ...int) {
	reserved.Lock()
	defer reserved.Unlock()
	for _, port := range ports {
		delete(reserved.m, port)
	}
}

// reserved holds the ports handed out by freePorts and not yet released.
var reserved = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// Processes started by this test binary and not yet reaped, for the leak
// check in Main.
var pids = struct {
	sync.Mutex
	m map[int]string
}{m: map[int]string{}}

func trackPID(pid int, addr string) {
	pids.Lock()
	defer pids.Unlock()
	pids.m[pid] = addr
}

func untrackPID(pid int) {
	pids.Lock()
	defer pids.Unlock()
	delete(pids.m, pid)
}

func leakedProcesses() []string {
	// The reaping goroutine may still be finishing for a process killed
	// by the last cleanup: give it a moment, boundedly.
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids.Lock()
		var out []string
		for pid, addr := range pids.m {
			out = append(out, fmt.Sprintf("redis-server process pid %d on %s", pid, addr))
		}
		pids.Unlock()
		if len(out) == 0 || time.Now().After(deadline) {
			sort.Strings(out)
			return out
		}
		time.Sleep(pollInterval)
	}
}

func removeLeakedProcesses() {
	pids.Lock()
	defer pids.Unlock()
	for pid := range pids.m {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
