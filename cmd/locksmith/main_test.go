package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// binary is the locksmith command built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "locksmith-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "locksmith")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building locksmith:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testTimeout ends a locksmith process that hangs; no test relies on it.
const testTimeout = 60 * time.Second

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a locksmith process started by a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	code           int
}

// start starts locksmith with args and the extra environment env.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				p.code = 128 + int(ws.Signal())
			} else {
				p.code = ee.ExitCode()
			}
		default:
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for p to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(testTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("locksmith did not exit; stderr: %s", p.stderr.String())
		return 0
	}
}

// result is the outcome of a locksmith run to completion.
type result struct {
	code           int
	stdout, stderr string
}

// locksmith runs the command to completion.
func locksmith(t *testing.T, env []string, args ...string) result {
	t.Helper()
	p := start(t, env, args...)
	code := p.wait(t)
	return result{code: code, stdout: p.stdout.String(), stderr: p.stderr.String()}
}

// nodes starts n healthy servers and returns them with their --nodes flag.
func nodes(t *testing.T, n int) ([]*testServer, string) {
	t.Helper()
	var servers []*testServer
	var urls []string
	for range n {
		s := startServer(t)
		servers = append(servers, s)
		urls = append(urls, s.URL())
	}
	return servers, "--nodes=" + strings.Join(urls, ",")
}

// rdb returns a client of s, closed when t ends.
func rdb(t *testing.T, s *testServer) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// holders returns how many servers have key.
func holders(t *testing.T, servers []*testServer, key string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		got, err := rdb(t, s).Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += int(got)
	}
	return n
}

// awaitFile waits until path exists or p exits.
func awaitFile(t *testing.T, p *proc, path string) {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("locksmith exited (code %d) before %s appeared; stderr: %s", p.code, filepath.Base(path), p.stderr.String())
		case <-deadline:
			t.Fatalf("%s did not appear", path)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// awaitOutput waits until p's stderr contains s, or p exits.
func awaitStderr(t *testing.T, p *proc, s string) {
	t.Helper()
	deadline := time.After(testTimeout)
	for !strings.Contains(p.stderr.String(), s) {
		select {
		case <-p.done:
			t.Fatalf("locksmith exited (code %d) before writing %q; stderr: %s", p.code, s, p.stderr.String())
		case <-deadline:
			t.Fatalf("locksmith did not write %q", s)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
