package redlock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/fencecheck"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
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
			benchLockUnlock(b, n, redlock.WithNodeTimeout(time.Second))
		})
	}
	// What an Observer with every callback set adds; without one, the
	// cases above pay only nil checks.
	b.Run("nodes=3/observed", func(b *testing.B) {
		benchLockUnlock(b, 3, redlock.WithNodeTimeout(time.Second), redlock.WithObserver(countingObserver()))
	})
}

func benchLockUnlock(b *testing.B, n int, opts ...redlock.Option) {
	client, err := redlock.New(benchConns(b, n), opts...)
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
}

// countingObserver sets every callback to count its calls.
func countingObserver() observe.Observer {
	var events atomic.Int64
	return observe.Observer{
		LockStart: func(ctx context.Context, _ observe.LockStartInfo) context.Context {
			events.Add(1)
			return ctx
		},
		AttemptDone:  func(context.Context, observe.RoundInfo) { events.Add(1) },
		Acquired:     func(context.Context, observe.AcquiredInfo) { events.Add(1) },
		NotAcquired:  func(context.Context, observe.NotAcquiredInfo) { events.Add(1) },
		Extended:     func(context.Context, observe.RoundInfo) { events.Add(1) },
		ExtendFailed: func(context.Context, observe.RoundInfo) { events.Add(1) },
		LockLost:     func(context.Context, observe.LockLostInfo) { events.Add(1) },
		Released:     func(context.Context, observe.RoundInfo) { events.Add(1) },
	}
}

// BenchmarkContendedLockUnderFlappingFaults measures the time per grant of
// three goroutines that lock and unlock one resource on five in-process
// nodes, of which up to two take a random fault that changes every 5 ms:
// a failure, a lost reply, a delay or a hang (faults.Scramble). Each
// failed release leaves a key that refuses every lock until its TTL, 1 s,
// runs out. Run it with a fixed count, -benchtime=60x say: one op is one
// grant.
func BenchmarkContendedLockUnderFlappingFaults(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		b.Run(fmt.Sprintf("fenced=%v", fenced), func(b *testing.B) {
			c := newCluster(b, 5)
			opts := []redlock.Option{
				redlock.WithNodeTimeout(testNodeTimeout),
				redlock.WithRetryStrategy(redlock.ConstantBackoff(time.Millisecond, 10*time.Millisecond, 1000)),
			}
			if fenced {
				opts = append(opts, redlock.WithFencing())
			}
			client, err := redlock.New(c.conns, opts...)
			if err != nil {
				b.Fatal(err)
			}
			run := fencecheck.Run{
				Resources: []string{"r"},
				Workers:   3,
				Grants:    b.N,
				Seed:      1,
				TickEvery: flapEvery,
				Tick:      flap(c),
			}
			b.ResetTimer()
			grants, err := run.Collect(fencedLocker(client, time.Second))
			b.StopTimer()
			settle(b, client)
			if err != nil {
				b.Fatal(err)
			}
			if total, _ := fencecheck.Report(grants); total < b.N {
				b.Fatalf("%d grants, want %d", total, b.N)
			}
		})
	}
}
