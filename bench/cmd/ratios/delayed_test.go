package main

import (
	"strings"
	"testing"
	"time"
)

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

func TestPingMeasuresTheAddedDelay(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(delayedSample)); err != nil {
		t.Fatal(err)
	}
	got, ok := r.ping("BenchmarkDelayed/delay=250us/nodes=1")
	if !ok {
		t.Fatal("no PING row at nodes=1")
	}
	// Medians 40 µs direct and 550 µs proxied: a round trip 510 µs
	// longer, 255 µs each way, 5 µs more than the 250 µs set.
	want := pingRow{nominal: 250 * time.Microsecond, direct: 40e3, proxy: 550e3, addedEachWay: 255e3, overheadPerWay: 5e3}
	if got != want {
		t.Errorf("ping row = %+v; want %+v", got, want)
	}
	if _, ok := r.ping("BenchmarkDelayed/delay=250us/nodes=3"); ok {
		t.Error("a PING row at nodes=3, which has no PING results")
	}
}

func TestDelayedGoals(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(delayedSample)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bench     benchmark
		lib, peer string
		want      string
	}{
		// 1.03x the floor is still within it; below redsync in time,
		// allocs equal, bytes lower.
		{"BenchmarkDelayed/delay=250us/nodes=1", "locksmith", "redsync", "met"},
		// No raw-script result at nodes=3; slower than the peer, more
		// allocations and bytes.
		{"BenchmarkDelayed/delay=250us/nodes=3", "locksmith-redigo", "redsync-redigo", "MISSED: no time/raw-script, time/peer, allocs, bytes"},
	}
	for _, tt := range tests {
		if got := r.delayedGoals(tt.bench, tt.lib, tt.peer).verdict(); got != tt.want {
			t.Errorf("goals of %s at %s = %q; want %q", tt.lib, tt.bench, got, tt.want)
		}
	}

	var out strings.Builder
	if err := report(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Delayed/delay=250us/nodes=1         40.0         550.0           255.0         250.0                        5.0",
		"Goals met on 1 of 2 locksmith rows.",
		"locksmith / redsync on the same client",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
