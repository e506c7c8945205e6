package redisnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// Backend names a way of running Redis servers.
type Backend string

// The backends, as spelled in $LOCKSMITH_BACKEND.
const (
	// Process runs redis-server processes on free loopback ports.
	Process Backend = "process"
	// Container runs one container per node with the docker command.
	Container Backend = "container"
)

// Environment variables read by [Start].
const (
	// BackendEnv selects the backend: "process" (also when unset) or
	// "container".
	BackendEnv = "LOCKSMITH_BACKEND"
	// ImageEnv names the image the container backend runs. Default:
	// [DefaultImage]; any Redis 7 image whose PATH has redis-server works,
	// such as redis:7.
	ImageEnv = "LOCKSMITH_REDIS_IMAGE"
)

// DefaultImage is the image integration/build-image.sh builds from the host's
// redis-server.
const DefaultImage = "locksmith/redis:7-local"

// Start starts n servers configured by cfg on the backend $LOCKSMITH_BACKEND
// selects (see [BackendEnv]) and returns once all of them answer commands.
// They are destroyed (and their data removed) when the test ends; while a
// test fails, the end of each server's log is added to the test output. Any
// failure to start ends the test with t.Fatalf, so Start must be called from
// the test goroutine. The test binary's TestMain must run [Main].
func Start(t testing.TB, n int, cfg Config) []*Node {
	t.Helper()
	requireMain(t)
	if cfg.TLS && cfg.Cluster {
		// A cluster node in a container is reached at its bridge IP,
		// which its certificate does not cover.
		t.Fatal("redisnode: Config.TLS and Config.Cluster do not go together")
	}
	switch backend(t) {
	case Process:
		return startProcesses(t, n, cfg)
	case Container:
		return startContainers(t, n, cfg, image())
	}
	return nil
}

// backend returns the backend $LOCKSMITH_BACKEND selects, processes when it
// is unset. An unknown value fails the test. A backend is never replaced by
// another: if it cannot start servers, Start fails the test.
func backend(t testing.TB) Backend {
	t.Helper()
	switch v := Backend(os.Getenv(BackendEnv)); v {
	case "":
		return Process
	case Process, Container:
		return v
	default:
		t.Fatalf("redisnode: %s=%q: want %q or %q", BackendEnv, v, Process, Container)
		return ""
	}
}

// image returns the container image named by $LOCKSMITH_REDIS_IMAGE, or
// [DefaultImage].
func image() string {
	if img := os.Getenv(ImageEnv); img != "" {
		return img
	}
	return DefaultImage
}

// launch starts one server. It runs on its own goroutine, so it reports
// failures instead of failing the test. A non-nil server returned with an
// error still holds resources that must be destroyed.
type launch func(ctx context.Context, i int) (server, error)

// startAll launches n servers in parallel, registers their destruction with
// t.Cleanup, waits until each answers and fails the test on any error.
func startAll(t testing.TB, backend Backend, n int, cfg Config, ca *redisserver.CA, start launch) []*Node {
	t.Helper()
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		node := &Node{backend: backend, cfg: cfg, state: running}
		if ca != nil {
			node.tlsConf = ca.ClientConfig()
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout+readyTimeout)
			defer cancel()
			srv, err := start(ctx, i)
			if srv == nil {
				errs[i] = err
				return
			}
			node.srv = srv
			nodes[i] = node
			if err == nil {
				err = node.ready(ctx)
			}
			if err != nil {
				errs[i] = fmt.Errorf("%w%s", err, node.logSuffix(ctx))
			}
		})
	}
	wg.Wait()
	for _, node := range nodes {
		if node != nil {
			t.Cleanup(func() { destroyNode(t, node) })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redisnode: starting %d node(s) on the %s backend: %v", n, backend, err)
	}
	return nodes
}

func destroyNode(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if t.Failed() {
		if tail := n.srv.logTail(ctx); tail != "" {
			t.Logf("redisnode: last lines of the log of %s:\n%s", n.Addr(), tail)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.srv.destroy(ctx); err != nil {
		t.Errorf("redisnode: destroying %s (%s backend): %v", n.Addr(), n.backend, err)
	}
	n.state = stopped
}

// mainRan records that [Main] is in charge of this test binary, so the leak
// check runs after the tests.
var mainRan atomic.Bool

func requireMain(t testing.TB) {
	t.Helper()
	if !mainRan.Load() {
		t.Fatalf("redisnode: this package's TestMain must call os.Exit(redisnode.Main(m)), which checks that no server outlives the tests")
	}
}

// Main runs the tests of a package that uses redisnode and then checks that
// no redis-server process started by this test binary and no container
// labelled with this run's id is left; any leftover is printed, removed and
// makes the run fail. When the tests passed, it also fails the run if a
// goroutine outlived them (go.uber.org/goleak): clients, subscriptions and
// renewals must all have been stopped. opts add goleak options, such as
// goroutines of a dependency to ignore. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }
func Main(m *testing.M, opts ...goleak.Option) int {
	mainRan.Store(true)
	code := m.Run()
	leaks := redisserver.Leaked()
	redisserver.KillLeaked()
	containerLeaks, err := leakedContainers(true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redisnode: leak check: listing containers: %v\n", err)
		code = max(code, 1)
	}
	leaks = append(leaks, containerLeaks...)
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "redisnode: leak check FAILED: %d server(s) outlived the tests and were removed:\n", len(leaks))
		for _, l := range leaks {
			fmt.Fprintf(os.Stderr, "\t%s\n", l)
		}
		code = max(code, 1)
	}
	if code == 0 {
		if err := goleak.Find(append(leakIgnores(), opts...)...); err != nil {
			fmt.Fprintf(os.Stderr, "redisnode: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// leakIgnores leaves out goroutines that are not leaks: rueidis's and
// valkey-go's delayed retries (a cluster topology refresh, a singleflight
// retry) that finish a sleep of up to a few seconds after their client is
// closed, and then end.
func leakIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*call).DelayDo.func1"),
	}
}
