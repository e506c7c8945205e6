package main

import (
	"strings"
	"testing"
)

const semaphoreSample = `BenchmarkSemaphoreUncontended/nodes=3/limit=4/lib=locksmith-lock-2      	 3000	 200000 ns/op	 7000 B/op	 100 allocs/op
BenchmarkSemaphoreUncontended/nodes=3/limit=4/lib=locksmith-semaphore-2 	 3000	 220000 ns/op	 7000 B/op	 120 allocs/op
BenchmarkSemaphoreUncontended/nodes=3/limit=16/lib=locksmith-lock-2     	 3000	 200000 ns/op	 7000 B/op	 100 allocs/op
BenchmarkSemaphoreUncontended/nodes=3/limit=16/lib=locksmith-semaphore-2 	 3000	 260000 ns/op	 7000 B/op	 150 allocs/op
BenchmarkSemaphoreContended/nodes=3/limit=4/hold=1ms/think=0s/lib=locksmith-semaphore-2 	 1000	 300000 ns/op	 95 busy-%	 0.5 full/grant	 0 give-ups	 3000 grants/s	 1 partial/grant	 2.5 rounds/grant	 5 wait-p50-ms	 9 wait-p99-ms
BenchmarkSemaphoreContended/nodes=3/limit=4/hold=1ms/think=0s/lib=redsync-mutexes-2     	 1000	 1000000 ns/op	 20 busy-%	 0 give-ups	 900 grants/s	 3 rounds/grant	 1 wait-p50-ms	 200 wait-p99-ms
BenchmarkSemaphoreContended/nodes=3/limit=4/hold=1ms/think=0s/lib=redsync-mutexes-1ms-2 	 1000	 1000000 ns/op	 20 busy-%	 0 give-ups	 1200 grants/s	 5 rounds/grant	 6 wait-p50-ms	 50 wait-p99-ms
BenchmarkSemaphoreContended/nodes=5/limit=4/hold=1ms/think=0s/lib=locksmith-semaphore-2 	--- FAIL: BenchmarkSemaphoreContended/nodes=5/limit=4/hold=1ms/think=0s/lib=locksmith-semaphore-2
    semaphore_test.go:246: redlock: unlock not confirmed
--- FAIL: BenchmarkSemaphoreContended
`

// TestSemaphoreReport checks the semaphore tables: the uncontended ratio
// judged against 1.15, and the contended goals judged against every
// redsync-mutexes row, so that one rival within 3x misses the goal. The
// line of a failed sub-benchmark is no result.
func TestSemaphoreReport(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(semaphoreSample)); err != nil {
		t.Fatal(err)
	}
	bench := benchmark("BenchmarkSemaphoreContended/nodes=3/limit=4/hold=1ms/think=0s")
	if got, want := r.contendedVerdict(bench), "MISSED: 2.50x redsync-mutexes-1ms"; got != want {
		t.Errorf("contended verdict = %q, want %q", got, want)
	}
	if got, want := r.contendedVerdict("BenchmarkSemaphoreContended/nodes=5/limit=4/hold=1ms/think=0s"), "MISSED: no busy-%, no redsync-mutexes row"; got != want {
		t.Errorf("contended verdict without data = %q, want %q", got, want)
	}

	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"SemaphoreUncontended/nodes=3/limit=4 200.00 220.00 1.10 1.00 1.20 met",
		"SemaphoreUncontended/nodes=3/limit=16 200.00 260.00 1.30 1.00 1.50 MISSED: 1.300 > 1.15",
		"Goal met on 1 of 2 rows.",
		"SemaphoreContended/nodes=3/limit=4/hold=1ms/think=0s redsync-mutexes 900.00 20.00 1.00 200.00 3.00 - - 3.33 -",
		"Goals met on 0 of 1 rows.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Ratios of medians") {
		t.Errorf("report of semaphore results only has the lock ratio table:\n%s", out.String())
	}
}
