package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer starts a server that sends every line it reads back, closed
// when t ends.
func echoServer(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(conn, conn) })
		}
	})
	t.Cleanup(func() {
		listener.Close()
		mu.Lock()
		for _, conn := range conns {
			conn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return listener.Addr().String()
}

func startProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	line := NewLine()
	t.Cleanup(line.Close) // after the proxy's Close, registered below
	p, err := Start(line, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Only to end a hang.
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// exchange sends line and returns the line read back.
func exchange(t *testing.T, conn net.Conn, r *bufio.Reader, line string) string {
	t.Helper()
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(got, "\n")
}

func TestForwards(t *testing.T) {
	p := startProxy(t, echoServer(t))
	conn := dial(t, p.Addr())
	r := bufio.NewReader(conn)
	for _, line := range []string{"one", "two", strings.Repeat("x", 3*chunkSize)} {
		if got := exchange(t, conn, r, line); got != line {
			t.Errorf("echo through the proxy: got %d bytes, want %d", len(got), len(line))
		}
	}
}

func TestDelayHoldsEveryChunk(t *testing.T) {
	const delay = 30 * time.Millisecond
	tests := []struct {
		name           string
		request, reply time.Duration
	}{
		{"requests", delay, 0},
		{"replies", 0, delay},
		{"both", delay, delay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, echoServer(t))
			if err := p.SetDelays(tt.request, tt.reply); err != nil {
				t.Fatal(err)
			}
			conn := dial(t, p.Addr())
			r := bufio.NewReader(conn)
			for _, line := range []string{"first", "second"} {
				start := time.Now()
				got := exchange(t, conn, r, line)
				// A lower bound only: the proxy may never deliver early.
				if elapsed, least := time.Since(start), tt.request+tt.reply; elapsed < least {
					t.Errorf("reply to %q after %v, before the delays' sum of %v", line, elapsed, least)
				}
				if got != line {
					t.Errorf("echo of %q: got %q", line, got)
				}
			}

			// Chunks keep their order when several are held at once.
			lines := []string{"a", "b", "c", "d"}
			for _, line := range lines {
				if _, err := io.WriteString(conn, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range lines {
				got, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if got = strings.TrimSuffix(got, "\n"); got != want {
					t.Errorf("held chunks out of order: got %q, want %q", got, want)
				}
			}
		})
	}
}

func TestRefuseClosesThePort(t *testing.T) {
	p := startProxy(t, echoServer(t))
	conn := dial(t, p.Addr())
	r := bufio.NewReader(conn)
	if got := exchange(t, conn, r, "before"); got != "before" {
		t.Fatalf("echo before Refuse: got %q", got)
	}
	p.Refuse()
	p.Refuse() // idempotent

	if _, err := r.ReadString('\n'); err == nil {
		t.Error("a connection open before Refuse still reads")
	}
	_, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after Refuse: got %v, want %v", err, syscall.ECONNREFUSED)
	}
}

func TestBadInput(t *testing.T) {
	line := NewLine()
	defer line.Close()
	if _, err := Start(line, ""); err == nil {
		t.Error("Start with an empty upstream: got no error")
	}
	if _, err := Start(nil, echoServer(t)); err == nil {
		t.Error("Start with a nil Line: got no error")
	}
	p := startProxy(t, echoServer(t))
	for _, d := range [][2]time.Duration{{-time.Millisecond, 0}, {0, -time.Millisecond}} {
		if err := p.SetDelays(d[0], d[1]); err == nil {
			t.Errorf("SetDelays(%v, %v): got no error", d[0], d[1])
		}
	}
}
