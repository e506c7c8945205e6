package redisnode

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/redisserver"
	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestConfigValidateRejects(t *testing.T) {
	for _, cfg := range []Config{
		{AppendFsync: "sometimes"},
		{Users: []User{{Rules: []string{"on"}}}},
		{Directives: [][]string{{}}},
		{Directives: [][]string{{"two words", "x"}}},
	} {
		if err := cfg.validate(); err == nil {
			t.Errorf("validate(%+v) = nil, want an error", cfg)
		}
	}
}

// fatalRecorder stands in for a test whose Fatalf is expected.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestDefaultRejectsUnknownBackend(t *testing.T) {
	t.Setenv(BackendEnv, "vm")
	rec := &fatalRecorder{TB: t}
	if p := Default(rec); p != nil || !strings.Contains(rec.fatal, `"vm"`) {
		t.Errorf("Default with %s=vm = %v, fatal %q; want nil and a failure naming the value", BackendEnv, p, rec.fatal)
	}
}

// The certificate must verify at every address a client can reach the TLS
// port at: loopback, and for containers the bridge IP too.
func TestTLSCertificateCoversEveryAddress(t *testing.T) {
	t.Parallel()
	n := Start(t, 1, Config{TLS: true})[0]
	addrs := []string{n.TLSAddr()}
	if d, ok := n.srv.(*dockerNode); ok {
		addrs = append(addrs, net.JoinHostPort(d.containerIP(), redisTLSPort))
	}
	for _, addr := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := resp.DialWire(ctx, addr, n.TLSConfig())
		if err != nil {
			cancel()
			t.Errorf("TLS dial %s: %v", addr, err)
			continue
		}
		if got, err := conn.Do(ctx, "PING"); err != nil || got != "PONG" {
			t.Errorf("%s: PING = %#v, %v; want PONG", addr, got, err)
		}
		_ = conn.Close()
		cancel()
	}
}

// leakEnv makes TestLeakCheckFailsTheRun, run again as a child test binary,
// start a server that no cleanup removes.
const leakEnv = "REDISNODE_LEAK_DEMO"

// TestLeakCheckFailsTheRun proves the leak check in Main can fail: a child
// test binary leaves a server behind and must exit non-zero, naming it.
func TestLeakCheckFailsTheRun(t *testing.T) {
	if os.Getenv(leakEnv) == "1" {
		leakOneServer(t)
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeakCheckFailsTheRun$", "-test.count=1")
	cmd.Env = append(os.Environ(), leakEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		t.Fatalf("the child run that leaked a server exited 0; output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "leak check FAILED") {
		t.Fatalf("the child run failed (%v) without reporting the leak; output:\n%s", err, out.String())
	}
	t.Logf("child run failed as it should:\n%s", tailLines(out.String(), 6))
}

// leakOneServer starts a server on the active backend the way Start does,
// minus the cleanup.
func leakOneServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		srv server
		err error
	)
	switch p := Default(t).(type) {
	case processProvider:
		var s *redisserver.Server
		if s, err = redisserver.Start(ctx, redisserver.Config{Dir: t.TempDir()}); err == nil {
			srv = process{s}
		}
	case containerProvider:
		containersUsed.Store(true)
		srv, err = startContainer(ctx, t.Name(), nil, p.image, Config{}, nil)
	default:
		t.Fatalf("unknown provider %T", p)
	}
	if err != nil {
		t.Fatalf("starting the server to leak: %v", err)
	}
	t.Logf("leaving %s behind", srv.addr())
}

// Restart fails, instead of handing out a stranger's address, when another
// program took the port while the node was down.
func TestRestartOnATakenPortFails(t *testing.T) {
	n := NewProcessProvider().Start(t, 1, Config{})[0]
	n.Stop(t)
	pongServerAt(t, n.Addr())
	rec := &fatalRecorder{TB: t}
	n.Restart(rec)
	if !strings.Contains(rec.fatal, "exited during start-up") {
		t.Errorf("Restart with %s taken: fatal %q, want it to report that redis-server exited", n.Addr(), rec.fatal)
	}
}

// A Redis in protected mode is not one this package started: waiting for it
// ends at once with an error that says so, which lets the container backend
// start over on other ports.
func TestWaitReadyRejectsProtectedMode(t *testing.T) {
	l := replyServer(t, "127.0.0.1:0", "-DENIED Redis is running in protected mode because protected mode is enabled\r\n")
	err := waitReady(t.Context(), l.Addr().String(), "")
	if !isDenied(err) || !strings.Contains(err.Error(), "protected mode") {
		t.Fatalf("waitReady on a server in protected mode = %v, want a DENIED error", err)
	}
	// Other error replies still count as an answer.
	l = replyServer(t, "127.0.0.1:0", "-NOAUTH Authentication required.\r\n")
	if err := waitReady(t.Context(), l.Addr().String(), ""); err != nil {
		t.Errorf("waitReady on a server that wants a password = %v, want nil", err)
	}
}

// pongServerAt listens on addr and answers every read with +PONG, the way
// any Redis would answer a PING.
func pongServerAt(t *testing.T, addr string) net.Listener {
	return replyServer(t, addr, "+PONG\r\n")
}

// replyServer listens on addr and answers every read with reply.
func replyServer(t *testing.T, addr, reply string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			})
		}
	})
	return l
}
