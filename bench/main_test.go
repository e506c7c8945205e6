package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/locksmith-go/locksmith/bench/internal/redisproc"
)

// maxNodes is how many servers TestMain starts; a benchmark on N nodes uses
// the first N.
const maxNodes = 5

// servers are the servers TestMain started, and addrs their addresses.
var (
	servers []*redisproc.Server
	addrs   []string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	servers, err = redisproc.Start(context.Background(), maxNodes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	stop := func() {
		if err := redisproc.StopAll(servers); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
	defer stop()

	// An interrupted run stops its servers too. (A crash leaves that to
	// the kernel: see redisproc.)
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
