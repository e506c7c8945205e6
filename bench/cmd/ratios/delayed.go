package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// delayedBenchmark is the name of the benchmark at a realistic round trip;
// its results are named delayedBenchmark + "/delay=D/nodes=N/lib=LIB",
// where D is what a proxy adds each way, as 250us.
const delayedBenchmark = "BenchmarkDelayed"

// The libs of BenchmarkDelayed's PING results: a PING sent to the N
// servers at once, without and through their proxies.
const (
	pingDirect = "ping-direct"
	pingProxy  = "ping-proxy"
)

// The goals of issue 39 for every locksmith variant at a realistic round
// trip, each against a peer in the same run: time at most delayedMaxToFloor
// times the raw script floor's and not above redsync's on the same client;
// allocations and bytes per lock+unlock not above redsync's on the same
// client.
const (
	delayedFloor      = "raw-script"
	delayedMaxToFloor = 1.03
)

func isDelayed(bench benchmark) bool {
	return strings.HasPrefix(string(bench), delayedBenchmark+"/")
}

// delayOf returns the delay each way in the name of a BenchmarkDelayed
// result, and false when it has none or it does not parse.
func delayOf(bench benchmark) (time.Duration, bool) {
	for part := range strings.SplitSeq(string(bench), "/") {
		if v, ok := strings.CutPrefix(part, "delay="); ok {
			d, err := time.ParseDuration(v)
			return d, err == nil
		}
	}
	return 0, false
}

// A pingRow is what the PING results of one BenchmarkDelayed bench say
// about its proxy.
type pingRow struct {
	nominal        time.Duration // the delay each way that the proxy was set to
	direct, proxy  float64       // median ns per PING, without and through it
	addedEachWay   float64       // (proxy - direct) / 2, in ns
	overheadPerWay float64       // addedEachWay - nominal, in ns: the proxy's own cost
}

// ping returns the pingRow of bench, and false when bench lacks either
// PING result or a delay in its name.
func (r *results) ping(bench benchmark) (pingRow, bool) {
	nominal, ok := delayOf(bench)
	if !ok {
		return pingRow{}, false
	}
	direct, ok := r.median(bench, pingDirect, "ns/op")
	if !ok {
		return pingRow{}, false
	}
	proxy, ok := r.median(bench, pingProxy, "ns/op")
	if !ok {
		return pingRow{}, false
	}
	added := (proxy - direct) / 2
	return pingRow{
		nominal:        nominal,
		direct:         direct,
		proxy:          proxy,
		addedEachWay:   added,
		overheadPerWay: added - float64(nominal),
	}, true
}

// reportDelayed prints, for the BenchmarkDelayed results in benches: the
// delay the proxies really add, measured with PING; every contender's
// medians per lock+unlock; and, for each locksmith variant, the goals of
// issue 39 at this round trip.
func reportDelayed(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintln(w, "At a realistic round trip: serial lock+unlock, every node behind a proxy adding a delay each way.")
	fmt.Fprintln(w, "\nThe delay the proxy really adds, from a go-redis PING sent to the N nodes at once without and through")
	fmt.Fprintln(w, "the proxies (µs, medians); at N > 1 the slowest of N round trips, the floor under a fan-out")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tPING direct\tPING proxied\tadded each way\tset each way\tproxy's own cost each way\t")
	for _, bench := range benches {
		p, ok := r.ping(bench)
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", short(bench),
			p.direct/1e3, p.proxy/1e3, p.addedEachWay/1e3, float64(p.nominal)/1e3, p.overheadPerWay/1e3)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nPer lock+unlock, medians; spin-% is the share of the time the proxies' delay line kept one core busy")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlib\tµs/op\tB/op\tallocs/op\tspin-%\t")
	for _, bench := range benches {
		for _, lib := range r.libs {
			if _, ok := r.values[bench][lib]; !ok {
				continue
			}
			ns, nsOK := r.median(bench, lib, "ns/op")
			bytes, bytesOK := r.median(bench, lib, "B/op")
			allocs, allocsOK := r.median(bench, lib, "allocs/op")
			spin, spinOK := r.median(bench, lib, "spin-%")
			fmt.Fprintf(tw, "%s\t%s\t%s%s%s%s\n", short(bench), lib,
				cell(ns/1e3, nsOK), number(bytes, bytesOK), number(allocs, allocsOK), cell(spin, spinOK))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nGoals of issue 39 at this round trip, per locksmith variant: time <= %.2fx %s's and <= redsync's\n", delayedMaxToFloor, delayedFloor)
	fmt.Fprintln(w, "on the same client; allocs/op and B/op <= redsync's on the same client")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlib\tpeer\ttime/"+delayedFloor+"\ttime/peer\tallocs/peer\tB/peer\tgoals\t")
	met, judged := 0, 0
	for _, bench := range benches {
		for _, pair := range sameClient {
			lib, peer := pair[0], pair[1]
			if r.values[bench][lib] == nil {
				continue
			}
			g := r.delayedGoals(bench, lib, peer)
			judged++
			if g.met() {
				met++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s%s%s%s\t\n", short(bench), lib, peer,
				cell(g.toFloor.v, g.toFloor.ok), cell(g.time.v, g.time.ok),
				cell(g.allocs.v, g.allocs.ok), cell(g.bytes.v, g.bytes.ok), g.verdict())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Goals met on %d of %d locksmith rows.\n", met, judged)
	return nil
}

// A ratio is a ratio of medians, ok false when one of them is missing.
type ratio struct {
	v  float64
	ok bool
}

// delayedGoals are one locksmith row's ratios for the goals of issue 39.
type delayedGoals struct {
	toFloor, time, allocs, bytes ratio
}

func (r *results) delayedGoals(bench benchmark, lib, peer string) delayedGoals {
	get := func(base, unit string) ratio {
		v, ok := r.ratio(bench, lib, base, unit)
		return ratio{v, ok}
	}
	return delayedGoals{
		toFloor: get(delayedFloor, "ns/op"),
		time:    get(peer, "ns/op"),
		allocs:  get(peer, "allocs/op"),
		bytes:   get(peer, "B/op"),
	}
}

// misses names each goal missed, or without the data to judge it.
func (g delayedGoals) misses() []string {
	var misses []string
	check := func(name string, r ratio, max float64) {
		switch {
		case !r.ok:
			misses = append(misses, "no "+name)
		case r.v > max:
			misses = append(misses, name)
		}
	}
	check("time/"+delayedFloor, g.toFloor, delayedMaxToFloor)
	check("time/peer", g.time, 1)
	check("allocs", g.allocs, 1)
	check("bytes", g.bytes, 1)
	return misses
}

func (g delayedGoals) met() bool { return len(g.misses()) == 0 }

func (g delayedGoals) verdict() string {
	if misses := g.misses(); len(misses) > 0 {
		return "MISSED: " + strings.Join(misses, ", ")
	}
	return "met"
}

// short returns bench without its Benchmark prefix.
func short(bench benchmark) string {
	return strings.TrimPrefix(string(bench), "Benchmark")
}

// number formats a count for a table cell, without decimals, "-" when
// there is none.
func number(v float64, ok bool) string {
	if !ok {
		return "-\t"
	}
	return fmt.Sprintf("%.0f\t", v)
}
