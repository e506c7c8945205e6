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
)

// fatalRecorder stands in for a test whose Fatalf is expected.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestUnknownBackendFails(t *testing.T) {
	t.Setenv(BackendEnv, "vm")
	rec := &fatalRecorder{TB: t}
	if b := backend(rec); b != "" || !strings.Contains(rec.fatal, `"vm"`) {
		t.Errorf("backend with %s=vm = %q, fatal %q; want none and a failure naming the value", BackendEnv, b, rec.fatal)
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
	t.Logf("child run failed as it should:\n%s", redisserver.Tail(out.String(), 6))
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
	switch backend(t) {
	case Process:
		var s *redisserver.Server
		if s, err = redisserver.Start(ctx, redisserver.Config{Dir: t.TempDir()}); err == nil {
			srv = process{s}
		}
	case Container:
		containersUsed.Store(true)
		srv, err = startContainer(ctx, t.Name(), image(), Config{}, nil)
	}
	if err != nil {
		t.Fatalf("starting the server to leak: %v", err)
	}
	t.Logf("leaving %s behind", srv.addr())
}

// Restart fails, instead of handing out a stranger's address, when another
// program took the port while the node was down.
func TestRestartOnATakenPortFails(t *testing.T) {
	requireMain(t)
	n := startProcesses(t, 1, Config{})[0]
	n.Stop(t)
	pongServerAt(t, n.Addr())
	rec := &fatalRecorder{TB: t}
	n.Restart(rec)
	if !strings.Contains(rec.fatal, "exited during start-up") {
		t.Errorf("Restart with %s taken: fatal %q, want it to report that redis-server exited", n.Addr(), rec.fatal)
	}
}

// An error reply other than LOADING counts as an answer.
func TestWaitReadyTakesAnErrorReplyAsAnAnswer(t *testing.T) {
	l := replyServer(t, "127.0.0.1:0", "-NOAUTH Authentication required.\r\n")
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
