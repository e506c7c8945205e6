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
