package main

import (
	"strings"
	"testing"
	"time"
)

const sample = `goos: linux
BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2         	     200	    120 ns/op	    30 B/op	      4 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2         	     200	    100 ns/op	    30 B/op	      4 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2         	     200	    110 ns/op	    30 B/op	      4 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-rueidis-2 	     200	    90 ns/op	    20 B/op	      2 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=raw-2               	     200	    100 ns/op	    10 B/op	      2 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=raw-2               	     200	    100 ns/op	    10 B/op	      2 allocs/op
BenchmarkHandoff/nodes=1/lib=locksmith-2 	     200	  2000 ns/op	        40.71 handoffs/s	    5039 B/op	      93 allocs/op
PASS
`

func TestSplitName(t *testing.T) {
	tests := []struct {
		name, bench, lib string
		ok               bool
	}{
		{"BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2", "BenchmarkLockUnlock/mode=serial/nodes=1", "locksmith", true},
		{"BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-rueidis-16", "BenchmarkLockUnlock/mode=serial/nodes=1", "locksmith-rueidis", true},
		{"BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-rueidis", "BenchmarkLockUnlock/mode=serial/nodes=1", "locksmith-rueidis", true},
		{"BenchmarkOther-2", "", "", false},
	}
	for _, tt := range tests {
		bench, lib, ok := splitName(tt.name)
		if string(bench) != tt.bench || lib != tt.lib || ok != tt.ok {
			t.Errorf("splitName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, bench, lib, ok, tt.bench, tt.lib, tt.ok)
		}
	}
}

func TestRatios(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	bench := benchmark("BenchmarkLockUnlock/mode=serial/nodes=1")
	if got, ok := r.median(bench, "locksmith", "ns/op"); !ok || got != 110 {
		t.Errorf("median ns/op of locksmith = %v, %v; want 110, true", got, ok)
	}
	if got, ok := r.median(bench, "raw", "ns/op"); !ok || got != 100 {
		t.Errorf("median ns/op of raw over 2 runs = %v, %v; want 100, true", got, ok)
	}
	if got, ok := r.ratio(bench, "locksmith", bench, "raw", "B/op"); !ok || got != 3 {
		t.Errorf("B/op ratio locksmith/raw = %v, %v; want 3, true", got, ok)
	}
	if _, ok := r.ratio(bench, "locksmith", bench, "redsync", "ns/op"); ok {
		t.Error("ratio against a missing base reported ok")
	}
	if got, ok := r.median("BenchmarkHandoff/nodes=1", "locksmith", "handoffs/s"); !ok || got != 40.71 {
		t.Errorf("median handoffs/s = %v, %v; want 40.71, true", got, ok)
	}
}

// TestReportRatios checks the rows of the ratio table: one per locksmith
// variant and base present, redsync paired by client, and the goals judged
// where they bound a ratio.
func TestReportRatios(t *testing.T) {
	const input = `BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-redigo-2 	 200	 300 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=redsync-redigo-2   	 200	 400 ns/op	 80 B/op	 8 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2        	 200	 500 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=redsync-rueidis-2  	 200	 100 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=1/lib=redsync-2          	 200	 400 ns/op	 20 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=parallel/nodes=1/lib=locksmith-2      	 200	 500 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=parallel/nodes=1/lib=raw-2            	 200	 250 ns/op	 40 B/op	 6 allocs/op
`
	r := newResults()
	if err := r.parse(strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(out.String()) {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	want := []string{
		"Ratios of medians, locksmith / base: below 1, locksmith is cheaper.",
		"benchmark lib base ns/op B/op allocs/op goals",
		"LockUnlock/mode=serial/nodes=1 locksmith-redigo redsync-redigo 0.75 0.50 0.75 met",
		"LockUnlock/mode=serial/nodes=1 locksmith redsync 1.25 2.00 1.00 MISSED: ns/op 1.250 > 1.15, B/op 2.000 > 1.00",
		"LockUnlock/mode=parallel/nodes=1 locksmith raw 2.00 1.00 1.00",
		"Goals met on 1 of 2 rows.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("report:\n%s\nwant the rows\n%s\n(redsync-rueidis has no locksmith-rueidis to pair with)", out.String(), strings.Join(want, "\n"))
	}
}

const delayedSample = `BenchmarkDelayed/delay=250us/nodes=1/lib=ping-direct-2       	 9000	   30000 ns/op	  0 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=ping-direct-2       	 9000	   50000 ns/op	  0 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=ping-direct-2       	 9000	   40000 ns/op	  0 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=ping-proxy-2        	 2000	  560000 ns/op	 90 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=ping-proxy-2        	 2000	  550000 ns/op	 90 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=ping-proxy-2        	 2000	  540000 ns/op	 90 spin-%	 188 B/op	  6 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=locksmith-2         	 1000	 1030000 ns/op	 90 spin-%	 900 B/op	 20 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=redsync-2           	 1000	 1040000 ns/op	 90 spin-%	1000 B/op	 20 allocs/op
BenchmarkDelayed/delay=250us/nodes=1/lib=raw-script-2        	 1000	 1000000 ns/op	 90 spin-%	 500 B/op	 10 allocs/op
BenchmarkDelayed/delay=250us/nodes=3/lib=locksmith-redigo-2  	 1000	 1100000 ns/op	 90 spin-%	 900 B/op	 30 allocs/op
BenchmarkDelayed/delay=250us/nodes=3/lib=redsync-redigo-2    	 1000	 1000000 ns/op	 90 spin-%	 800 B/op	 20 allocs/op
`

func TestDelayOf(t *testing.T) {
	tests := []struct {
		bench benchmark
		want  time.Duration
		ok    bool
	}{
		{"BenchmarkDelayed/delay=250us/nodes=1", 250 * time.Microsecond, true},
		{"BenchmarkDelayed/delay=2ms/nodes=5", 2 * time.Millisecond, true},
		{"BenchmarkDelayed/delay=fast/nodes=5", 0, false},
		{"BenchmarkLockUnlock/mode=serial/nodes=1", 0, false},
	}
	for _, tt := range tests {
		if got, ok := delayOf(tt.bench); got != tt.want || ok != tt.ok {
			t.Errorf("delayOf(%q) = %v, %v; want %v, %v", tt.bench, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDelayedReport(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(delayedSample)); err != nil {
		t.Fatal(err)
	}
	// 1.03x the floor is still within it; below redsync in time, allocs
	// equal, bytes lower.
	if got := r.verdict("BenchmarkDelayed/delay=250us/nodes=1", "locksmith", "raw-script"); got != "met" {
		t.Errorf("verdict of locksmith against raw-script = %q, want met", got)
	}
	if got := r.verdict("BenchmarkDelayed/delay=250us/nodes=1", "locksmith", peer); got != "met" {
		t.Errorf("verdict of locksmith against redsync = %q, want met", got)
	}
	// Slower than the peer, more allocations and bytes.
	if got, want := r.verdict("BenchmarkDelayed/delay=250us/nodes=3", "locksmith-redigo", peer), "MISSED: ns/op 1.100 > 1.00, B/op 1.125 > 1.00, allocs/op 1.500 > 1.00"; got != want {
		t.Errorf("verdict of locksmith-redigo = %q, want %q", got, want)
	}
	// No raw-script result at nodes=3: a goal without data is missed.
	if got, want := r.verdict("BenchmarkDelayed/delay=250us/nodes=3", "locksmith-redigo", "raw-script"), "MISSED: no ns/op"; got != want {
		t.Errorf("verdict without a raw-script result = %q, want %q", got, want)
	}

	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	// Medians 40 µs direct and 550 µs proxied: a round trip 510 µs
	// longer, 255 µs each way; nodes=3 has no PING results.
	for _, want := range []string{
		"Delayed/delay=250us/nodes=1 40.0 550.0 255.0 250.0",
		"Goals met on 2 of 3 rows.",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "nodes=3"); n != 1 {
		t.Errorf("report names nodes=3 %d times, want once (its ratio row; it has no PING results):\n%s", n, out.String())
	}
}

const graySample = `BenchmarkGray/scenario=healthy/lib=locksmith-2         	 200	 1000000 ns/op	 0 failed/op	 3 max-ms	 1.0 p50-ms	 2.0 p99-ms
BenchmarkGray/scenario=healthy/lib=locksmith-rueidis-2 	 200	 1000000 ns/op	 0 failed/op	 3 max-ms	 1.0 p50-ms	 4.0 p99-ms
BenchmarkGray/scenario=healthy/lib=redsync-2           	 200	 1000000 ns/op	 0 failed/op	 3 max-ms	 1.0 p50-ms	 2.0 p99-ms
BenchmarkGray/scenario=stopped/lib=locksmith-2         	 200	 1000000 ns/op	 0 failed/op	 9 max-ms	 2.0 p50-ms	 2.5 p99-ms
BenchmarkGray/scenario=stopped/lib=locksmith-2         	 200	 1000000 ns/op	 0 failed/op	 9 max-ms	 2.0 p50-ms	 3.5 p99-ms
BenchmarkGray/scenario=stopped/lib=locksmith-2         	 200	 1000000 ns/op	 0 failed/op	 9 max-ms	 2.0 p50-ms	 2.9 p99-ms
BenchmarkGray/scenario=stopped/lib=locksmith-rueidis-2 	 200	 1000000 ns/op	 0.5 failed/op	 9 max-ms	 2.0 p50-ms	 110 p99-ms
BenchmarkGray/scenario=stopped/lib=redsync-2           	 200	 1000000 ns/op	 0 failed/op	 200 max-ms	 101 p50-ms	 100 p99-ms
`

func TestGrayReport(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(graySample)); err != nil {
		t.Fatal(err)
	}
	stopped := benchmark("BenchmarkGray/scenario=stopped")
	if got, ok := r.ratio(stopped, "locksmith", grayHealthy, "locksmith", "p99-ms"); !ok || got != 1.45 {
		t.Errorf("stopped p99 / healthy p99 of locksmith = %v, %v; want 1.45 (the median 2.9 / 2), true", got, ok)
	}
	if got := r.grayVerdict(stopped, "locksmith"); got != "met" {
		t.Errorf("verdict for locksmith at 1.45x healthy and 0.03x redsync = %q, want met", got)
	}
	if got, want := r.grayVerdict(stopped, "locksmith-rueidis"), "MISSED: 50.0% failed, 27.50x healthy, 1.10x redsync"; got != want {
		t.Errorf("verdict for locksmith-rueidis = %q, want %q", got, want)
	}
	if got, want := r.grayVerdict("BenchmarkGray/scenario=slow", "locksmith"), "MISSED: no failed/op, no healthy p99, no redsync p99"; got != want {
		t.Errorf("verdict with no data = %q, want %q", got, want)
	}

	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99/redsync-failfast", "Goal met on 1 of 2 locksmith rows"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Ratios of medians") {
		t.Errorf("report of gray results only has the ratio tables:\n%s", out.String())
	}
}

func TestReportWithoutGray(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Gray failures") {
		t.Errorf("report without gray results has a gray table:\n%s", out.String())
	}
}
