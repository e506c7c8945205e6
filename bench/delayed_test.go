package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
// Beside the contenders, lib=ping-direct and lib=ping-proxy time a go-redis
// PING sent to the N servers at once, without and through their proxies:
// at N = 1, half their difference is the delay the proxy really adds each
// way; at N = 3 and 5, ping-proxy is the time of the slowest of N round
// trips on this host, the floor under any fan-out.
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
		// After the contenders, so that locksmith stays the first column,
		// the base, of benchstat's table by lib.
		for _, path := range []struct {
			lib   string
			addrs []string
		}{
			{"ping-direct", addrs[:n]},
			{"ping-proxy", proxied[:n]},
		} {
			b.Run(fmt.Sprintf("delay=%s/nodes=%d/lib=%s", delay, n, path.lib), func(b *testing.B) {
				withSpin(b, line, func() { ping(b, path.addrs) })
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

// ping times one go-redis PING to every server of addrs at once, the first
// on the calling goroutine and the others on goroutines of their own, as
// the raw floor sends its commands: the least a round on those servers can
// take. Its clients are made as every contender's go-redis clients are.
func ping(b *testing.B, addrs []string) {
	clients := goredisClients(b, addrs)
	ctx := context.Background()
	var failure atomic.Pointer[error]
	send := func(client *redis.Client) {
		if err := client.Ping(ctx).Err(); err != nil {
			failure.Store(&err)
		}
	}
	round := func() {
		var wg sync.WaitGroup
		for _, client := range clients[1:] {
			wg.Go(func() { send(client) })
		}
		send(clients[0])
		wg.Wait()
		if err := failure.Load(); err != nil {
			b.Fatal(*err)
		}
	}
	round() // opens the connections
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
}
