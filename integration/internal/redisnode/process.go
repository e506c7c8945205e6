package redisnode

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// startProcesses runs each node as a redis-server process (found on PATH)
// listening on 127.0.0.1 at a free port, with its own directory from
// t.TempDir() holding redis.conf, the log and the data. Stop, Kill, Pause
// and Resume are SIGTERM, SIGKILL, SIGSTOP and SIGCONT. The processes are
// those of package internal/redisserver, which the benchmarks and the
// command's tests start too.
func startProcesses(t testing.TB, n int, cfg Config) []*Node {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redisnode: the %s backend needs redis-server on PATH (apt-get install redis-server): %v", Process, err)
	}
	var ca *redisserver.CA
	if cfg.TLS {
		if ca, err = redisserver.NewCA(); err != nil {
			t.Fatalf("redisnode: test CA: %v", err)
		}
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	return startAll(t, Process, n, cfg, ca, func(ctx context.Context, i int) (server, error) {
		s, err := redisserver.Start(ctx, redisserver.Config{
			Bin:        bin,
			Dir:        dirs[i],
			TLS:        ca,
			ClusterBus: cfg.Cluster,
			Directives: append(cfg.directives(), cfg.Directives...),
		})
		if err != nil {
			return nil, err
		}
		return process{s}, nil
	})
}

// process is one redis-server process; it is restarted in place with the
// same redis.conf, ports and directory.
type process struct{ *redisserver.Server }

func (p process) addr() string    { return p.Addr() }
func (p process) tlsAddr() string { return p.TLSAddr() }

func (p process) meetAddr() (ip, port, busPort string) {
	return "127.0.0.1", strconv.Itoa(p.Port()), strconv.Itoa(p.BusPort())
}

func (p process) stop(ctx context.Context) error    { return p.Stop(ctx) }
func (p process) kill(ctx context.Context) error    { return p.Kill(ctx) }
func (p process) pause(context.Context) error       { return p.Pause() }
func (p process) resume(context.Context) error      { return p.Resume() }
func (p process) destroy(ctx context.Context) error { return p.Destroy(ctx) }

// start starts the process again and waits until it logs that it accepts
// connections, which proves that the server that will answer is this
// process: another program may have taken the port while the node was down.
func (p process) start(ctx context.Context) error { return p.Restart(ctx) }

func (p process) logTail(context.Context) string { return p.LogTail(20) }
