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
	// Container runs one container per node through testcontainers-go.
	Container Backend = "container"
)

// Environment variables read by [Default].
const (
	// BackendEnv selects the backend: "process", "container" or "auto"
	// (also when unset): a container if the Docker daemon answers and the
	// image is present locally, processes otherwise.
	BackendEnv = "LOCKSMITH_BACKEND"
	// ImageEnv names the image the container backend runs. Default:
	// [DefaultImage]; any Redis 7 image whose PATH has redis-server works,
	// such as redis:7.
	ImageEnv = "LOCKSMITH_REDIS_IMAGE"
)

// DefaultImage is the image integration/build-image.sh builds from the host's
// redis-server.
const DefaultImage = "locksmith/redis:7-local"

// Provider starts independent Redis 7 servers for a test.
type Provider interface {
	// Backend reports how the servers are run.
	Backend() Backend
	// Start starts n servers configured by cfg and returns once all of them
	// answer commands. They are destroyed (and their data removed) when the
	// test ends; while a test fails, the end of each server's log is added
	// to the test output. Any failure to start ends the test with t.Fatalf,
	// so Start must be called from the test goroutine. The test binary's
	// TestMain must run [Main].
	Start(t testing.TB, n int, cfg Config) []*Node
}

// Start starts n servers on the [Default] provider; see [Provider.Start].
func Start(t testing.TB, n int, cfg Config) []*Node {
	t.Helper()
	return Default(t).Start(t, n, cfg)
}

var (
	autoOnce    sync.Once
	autoBackend Backend
	autoReason  string
)

// Default returns the provider $LOCKSMITH_BACKEND selects (see [BackendEnv]).
// An unknown value fails the test. A backend named explicitly is never
// replaced by another: if it cannot start servers, Start fails the test.
func Default(t testing.TB) Provider {
	t.Helper()
	switch v := os.Getenv(BackendEnv); v {
	case string(Process):
		return NewProcessProvider()
	case string(Container):
		return NewContainerProvider(Image())
	case "", "auto":
		autoOnce.Do(func() {
			if err := containerUsable(Image()); err != nil {
				autoBackend, autoReason = Process, err.Error()
				return
			}
			autoBackend, autoReason = Container, "Docker answers and "+Image()+" is present"
		})
		t.Logf("redisnode: %s=auto chose the %s backend (%s)", BackendEnv, autoBackend, autoReason)
		if autoBackend == Container {
			return NewContainerProvider(Image())
		}
		return NewProcessProvider()
	default:
		t.Fatalf("redisnode: %s=%q: want %q, %q or \"auto\"", BackendEnv, v, Process, Container)
		return nil
	}
}

// Image returns the container image named by $LOCKSMITH_REDIS_IMAGE, or
// [DefaultImage].
func Image() string {
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
//
// Main also disables testcontainers' Ryuk reaper unless
// TESTCONTAINERS_RYUK_DISABLED is already set: the reaper is an image that
// would have to be pulled, and every container here is terminated by its
// test's cleanup and checked by this leak check instead.
func Main(m *testing.M, opts ...goleak.Option) int {
	if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
		// Read once by testcontainers, on first use: set before any test runs.
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	mainRan.Store(true)
	code := m.Run()
	leaks := redisserver.Leaked()
	containerLeaks, err := leakedContainers()
	if err != nil {
		fmt.Fprintf(os.Stderr, "redisnode: leak check: listing containers: %v\n", err)
		code = max(code, 1)
	}
	leaks = append(leaks, containerLeaks...)
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "redisnode: leak check FAILED: %d server(s) outlived the tests:\n", len(leaks))
		for _, l := range leaks {
			fmt.Fprintf(os.Stderr, "\t%s\n", l)
		}
		removeLeaks()
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

// leakIgnores leaves out goroutines that are not leaks: those of this
// package's Docker client, which is made once per test binary and keeps its
// HTTP connections to the engine open for reuse; and rueidis's and
// valkey-go's delayed retries (a cluster topology refresh, a singleflight
// retry) that finish a sleep of up to a few seconds after their client is
// closed, and then end.
func leakIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*call).DelayDo.func1"),
	}
}
