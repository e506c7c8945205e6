package main

import (
	"strings"
	"testing"
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
	if got, ok := r.ratio(bench, "locksmith", "raw", "B/op"); !ok || got != 3 {
		t.Errorf("B/op ratio locksmith/raw = %v, %v; want 3, true", got, ok)
	}
	if _, ok := r.ratio(bench, "locksmith", "redsync", "ns/op"); ok {
		t.Error("ratio against a missing baseline reported ok")
	}
	if got, ok := r.median("BenchmarkHandoff/nodes=1", "locksmith", "handoffs/s"); !ok || got != 40.71 {
		t.Errorf("median handoffs/s = %v, %v; want 40.71, true", got, ok)
	}

	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"locksmith-rueidis",
		"1-goroutine latency at N=1 within 15% of the raw floor: MET (ns/op ratio 1.10, limit 1.15)",
		"allocs per lock+unlock at N=5 <= 1/3 of redsync's: no data",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
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
	if got, ok := r.ratioAcross(stopped, "locksmith", grayHealthy, "locksmith", "p99-ms"); !ok || got != 1.45 {
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

func TestSameClientRatios(t *testing.T) {
	const input = `BenchmarkLockUnlock/mode=serial/nodes=3/lib=locksmith-redigo-2 	 200	 300 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=3/lib=redsync-redigo-2   	 200	 400 ns/op	 80 B/op	 8 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=3/lib=locksmith-2        	 200	 500 ns/op	 40 B/op	 6 allocs/op
BenchmarkLockUnlock/mode=serial/nodes=3/lib=redsync-rueidis-2  	 200	 100 ns/op	 40 B/op	 6 allocs/op
`
	r := newResults()
	if err := r.parse(strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := reportSameClient(&out, r, r.order); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out.String())
	want := strings.Fields(`locksmith / redsync on the same client
benchmark lib peer ns/op B/op allocs/op
LockUnlock/mode=serial/nodes=3 locksmith-redigo redsync-redigo 0.75 0.50 0.75`)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("same-client table:\n%s\nwant the rows of\n%s\n(locksmith has no redsync and redsync-rueidis no locksmith-rueidis to pair with)", out.String(), strings.Join(want, " "))
	}
}
