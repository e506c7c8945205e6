package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// nodeCounts are the cluster sizes every benchmark runs on.
var nodeCounts = []int{1, 3, 5}

// parallelism makes b.RunParallel start GOMAXPROCS×4 goroutines: enough to
// keep several requests in flight per core while the others wait on the
// network.
const parallelism = 4

// keysPerGoroutine is how many distinct keys one goroutine cycles through.
// Each is unlocked before the next is locked; cycling only keeps the
// benchmark from hammering a single key.
const keysPerGoroutine = 16

// keyTable returns keysPerGoroutine keys for each of goroutines
// goroutines, all distinct and starting with prefix. Keys are built before
// the timer starts, so their allocations are nobody's.
func keyTable(prefix string, goroutines int) [][]string {
	table := make([][]string, goroutines)
	for g := range table {
		table[g] = make([]string, keysPerGoroutine)
		for k := range table[g] {
			table[g][k] = prefix + ":" + strconv.Itoa(g) + ":" + strconv.Itoa(k)
		}
	}
	return table
}

// nothing is the work done while holding a lock in the uncontended
// benchmarks.
func nothing() {}

// warmUp opens the connections and loads the scripts a contender will need,
// from as many goroutines as the benchmark will use.
func warmUp(tb testing.TB, c contender, prefix string, goroutines int) {
	tb.Helper()
	table := keyTable(prefix+":warm-up", goroutines)
	errs := make(chan error, goroutines)
	for _, keys := range table {
		go func() {
			for _, key := range keys[:4] {
				if err := c.hold(context.Background(), key, false, nothing); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			tb.Fatalf("warm-up: %v", err)
		}
	}
}

// BenchmarkLockUnlock times one uncontended lock plus unlock, a single
// attempt on a key no other goroutine uses.
func BenchmarkLockUnlock(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, n := range nodeCounts {
			for _, spec := range contenders {
				if !spec.supports(n) {
					continue
				}
				name := fmt.Sprintf("mode=%s/nodes=%d/lib=%s", mode, n, spec.name)
				b.Run(name, func(b *testing.B) {
					c := spec.new(b, addrs[:n])
					prefix := "bench:" + name
					if mode == "serial" {
						lockUnlockSerial(b, c, prefix)
					} else {
						lockUnlockParallel(b, c, prefix)
					}
				})
			}
		}
	}
}

func lockUnlockSerial(b *testing.B, c contender, prefix string) {
	warmUp(b, c, prefix, 1)
	keys := keyTable(prefix, 1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := c.hold(ctx, keys[i%keysPerGoroutine], false, nothing); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func lockUnlockParallel(b *testing.B, c contender, prefix string) {
	goroutines := parallelism * runtime.GOMAXPROCS(0)
	warmUp(b, c, prefix, goroutines)
	table := keyTable(prefix, goroutines)
	ctx := context.Background()
	var next atomic.Int32
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		keys := table[next.Add(1)-1]
		for i := 0; pb.Next(); i++ {
			if err := c.hold(ctx, keys[i%keysPerGoroutine], false, nothing); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
