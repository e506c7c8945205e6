package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/bench/internal/faultproxy"
)

// delayEachWay is what the proxies of BenchmarkDelayed add to every chunk
// in each direction: a round trip of 0.5 ms, as between two hosts of one
// data centre, where a client pays the network rather than its goroutines.
const delayEachWay = 250 * time.Microsecond

// BenchmarkDelayed times one uncontended lock plus unlock from one
// goroutine, as BenchmarkLockUnlock's mode=serial does, with every node
// behind a faultproxy adding delayEachWay to every chunk each way, on 1, 3
// and 5 nodes, for every contender. Design decisions about goroutines and
// connections are taken on this row: loopback on a 2-core host magnifies
// goroutine costs that no production client pays.
//
// Beside the contenders, under nodes=1, lib=ping-direct and lib=ping-proxy
// time a go-redis PING to the first server without and through its proxy:
// half their difference is the delay the proxy really adds each way.
//
// Every result also reports spin-%: the share of the time the proxies'
// Line spent spinning (and so kept one of the host's cores busy) during the
// sub-benchmark, warm-up included.
func BenchmarkDelayed(b *testing.B) {
	line := faultproxy.NewLine()
	b.Cleanup(line.Close) // after the proxies' Close, registered below
	proxied := make([]string, len(addrs))
	for i, addr := range addrs {
		proxy, err := faultproxy.Start(line, addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(proxy.Close)
		if err := proxy.SetDelays(delayEachWay, delayEachWay); err != nil {
			b.Fatal(err)
		}
		proxied[i] = proxy.Addr()
	}

	// 250us for 250µs: benchmark names stay ASCII.
	delay := strings.ReplaceAll(delayEachWay.String(), "µ", "u")
	for _, n := range nodeCounts {
		if n == 1 {
			for _, path := range []struct{ lib, addr string }{
				{"ping-direct", addrs[0]},
				{"ping-proxy", proxied[0]},
			} {
				b.Run(fmt.Sprintf("delay=%s/nodes=1/lib=%s", delay, path.lib), func(b *testing.B) {
					withSpin(b, line, func() { ping(b, path.addr) })
				})
			}
		}
		for _, spec := range contenders {
			if !spec.supports(n) {
				continue
			}
			name := fmt.Sprintf("delay=%s/nodes=%d/lib=%s", delay, n, spec.name)
			b.Run(name, func(b *testing.B) {
				c := spec.new(b, proxied[:n])
				withSpin(b, line, func() { lockUnlockSerial(b, c, "bench:delayed:"+name) })
			})
		}
	}
}

// withSpin runs bench and reports the share of b's time that line spent
// spinning meanwhile.
func withSpin(b *testing.B, line *faultproxy.Line, bench func()) {
	before := line.Spun()
	bench()
	if elapsed := b.Elapsed(); elapsed > 0 {
		b.ReportMetric(100*float64(line.Spun()-before)/float64(elapsed), "spin-%")
	}
}

// ping times one go-redis PING to addr, on a client made as every
// contender's go-redis clients are.
func ping(b *testing.B, addr string) {
	client := redis.NewClient(goredisOptions(addr))
	defer client.Close()
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil { // opens the connection
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
