package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/locksmith-go/locksmith/internal/redisserver"
)

// maxNodes is how many servers TestMain starts; a benchmark on N nodes uses
// the first N.
const maxNodes = 5

// servers are the servers TestMain started, and addrs their addresses.
var (
	servers []*redisserver.Server
	addrs   []string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "locksmith-bench-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	stop := func() {
		for _, s := range servers {
			if err := s.Destroy(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
		}
		os.RemoveAll(dir)
	}
	defer stop()
	for i := range maxNodes {
		// Each server persists nothing.
		sdir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(sdir, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		s, err := redisserver.Start(context.Background(), redisserver.Config{
			Dir:        sdir,
			Directives: [][]string{{"save", ""}, {"appendonly", "no"}},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		servers = append(servers, s)
	}

	// An interrupted run stops its servers too. (A crash leaves that to
	// the kernel: see internal/redisserver.)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		<-signals
		stop()
		os.Exit(2)
	}()

	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	return m.Run()
}
