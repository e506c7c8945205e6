package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	goredisdriver "github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

// electionCandidates is how many candidates, each on a Client of its own,
// campaign in BenchmarkElectionFailover.
const electionCandidates = 2

// BenchmarkElectionFailover measures how long an election takes to have a
// new leader after its leader resigns: 2 candidates on Clients of their
// own campaign in turn, each leading for 1 ms and resigning; one op is one
// leadership. With release notifications (lib=locksmith) a resignation
// wakes the waiting candidate; without them (lib=locksmith-polling) it
// polls at the default retry delays, 50 to 250 ms. Besides ns/op it
// reports p50-ms, p99-ms and max-ms of the failover, from the return of
// one leader's Resign to the return of the next leader's Campaign (0
// when the Campaign returned first), on 3 and 5 nodes.
func BenchmarkElectionFailover(b *testing.B) {
	for _, n := range []int{3, 5} {
		for _, notify := range []bool{true, false} {
			lib := "locksmith"
			if !notify {
				lib = "locksmith-polling"
			}
			b.Run(fmt.Sprintf("nodes=%d/lib=%s", n, lib), func(b *testing.B) {
				var elections []*redlock.Election
				for range electionCandidates {
					var conns []driver.Conn
					for _, client := range goredisClients(b, addrs[:n]) {
						conns = append(conns, goredisdriver.New(client))
					}
					client, err := redlock.New(conns, redlock.WithReleaseNotifications(notify))
					if err != nil {
						b.Fatal(err)
					}
					settleAtEnd(b, client)
					e, err := client.Election(fmt.Sprintf("bench:election:%d:%s", n, lib), ttl)
					if err != nil {
						b.Fatal(err)
					}
					elections = append(elections, e)
				}
				failover(b, elections)
			})
		}
	}
}

func failover(b *testing.B, elections []*redlock.Election) {
	ctx := context.Background()
	var (
		mu      sync.Mutex
		changed = sync.NewCond(&mu)
		terms   int // leaderships so far, under mu
		times   handoffTimes
	)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, e := range elections {
		wg.Go(func() {
			for {
				l, err := e.Campaign(ctx, fmt.Sprint("candidate ", i))
				now := time.Now()
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				turn := terms
				terms++
				changed.Broadcast()
				mu.Unlock()
				if turn >= b.N {
					_ = l.Resign(ctx)
					return
				}
				times.record(&times.locked, turn, now)
				time.Sleep(handoffHold)
				if err := l.Resign(ctx); err != nil {
					b.Error(err)
					return
				}
				times.record(&times.unlocked, turn, time.Now())
				// Let the other candidate lead before campaigning again.
				mu.Lock()
				for terms == turn+1 {
					changed.Wait()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	lat := times.latencies()
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
}
