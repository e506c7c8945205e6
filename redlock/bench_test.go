package redlock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// benchConns returns n nodes: the servers listed in LOCKSMITH_BENCH_NODES
// (host:port,...) when it is set, in-process servers otherwise.
func benchConns(b *testing.B, n int) []driver.Conn {
	b.Helper()
	addrs := strings.Split(os.Getenv("LOCKSMITH_BENCH_NODES"), ",")
	if addrs[0] == "" {
		return newCluster(b, n).conns
	}
	if len(addrs) < n {
		b.Skipf("LOCKSMITH_BENCH_NODES lists %d nodes, need %d", len(addrs), n)
	}
	conns := make([]driver.Conn, n)
	for i := range conns {
		rc := resp.Dial(addrs[i])
		b.Cleanup(func() { rc.Close() })
		conns[i] = rc
	}
	return conns
}

func BenchmarkLockUnlock(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			client, err := redlock.New(benchConns(b, n), redlock.WithNodeTimeout(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			key := "bench:" + strconv.Itoa(n)
			b.ReportAllocs()
			for b.Loop() {
				l, err := client.TryLock(ctx, key, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
