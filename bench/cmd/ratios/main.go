// Command ratios reads the output of the bench module's benchmarks (go test
// -bench, any -count) and prints how locksmith compares with the other
// contenders: for every benchmark and locksmith variant, the median of its
// ns/op, B/op and allocs/op divided by the median of redsync's on the same
// Redis client, redislock's, the raw floor's and the raw script floor's
// (locksmith's scripts sent with no library). Below 1, locksmith is
// cheaper. Where one of the project's goals bounds a ratio, the row says
// whether it is met (see goals).
//
// The results of BenchmarkDelayed (lock+unlock with every node behind a
// proxy adding a delay each way) also get the delay the proxy really adds,
// measured with PING (see reportPing). Medians per contender are in the
// benchstat table beside this report.
//
// The results of BenchmarkGray get a table of their own instead (see
// reportGray): per scenario and contender, the per-call p50, p99 and max,
// and whether each locksmith variant meets the gray-failure goal. So do
// those of BenchmarkSemaphoreUncontended and BenchmarkSemaphoreContended
// (see reportSemaphores): Acquire+Unlock over Lock+Unlock, and the
// contended semaphore's grants/s and busy share beside redsync mutexes
// tried in turn, each with its goal.
//
// Usage:
//
//	ratios [file ...]
//
// With no file it reads standard input.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	results := newResults()
	if len(os.Args) == 1 {
		if err := results.parse(os.Stdin); err != nil {
			fatal(err)
		}
	}
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fatal(err)
		}
		err = results.parse(f)
		f.Close()
		if err != nil {
			fatal(fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(results.order) == 0 {
		fatal(fmt.Errorf("no benchmark results in the input"))
	}
	if err := report(os.Stdout, results); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ratios:", err)
	os.Exit(1)
}

// The units compared, in the order printed.
var units = []string{"ns/op", "B/op", "allocs/op"}

// peer is the base that stands for redsync over the same Redis client as
// each locksmith variant: redsync-redigo for locksmith-redigo, and so on.
const peer = "redsync on the same client"

// The bases locksmith is compared with, in the order printed.
var bases = []string{peer, "redislock", "raw", "raw-script"}

// A benchmark is one benchmark name without its lib= part, as
// "BenchmarkLockUnlock/mode=serial/nodes=1".
type benchmark string

// results holds every measurement: values[bench][lib][unit] lists one value
// per run.
type results struct {
	values map[benchmark]map[string]map[string][]float64
	order  []benchmark // in order of first appearance
	libs   []string    // likewise
}

func newResults() *results {
	return &results{values: make(map[benchmark]map[string]map[string][]float64)}
}

// parse reads benchmark lines in the standard format and ignores all other
// lines, among them the line of a sub-benchmark that failed (its name
// followed by "--- FAIL").
func (r *results) parse(in io.Reader) error {
	scanner := bufio.NewScanner(in)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // no iteration count: not a result
		}
		bench, lib, ok := splitName(fields[0])
		if !ok {
			continue
		}
		// fields[1] is the iteration count, then value-unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("benchmark line %q: %w", scanner.Text(), err)
			}
			r.add(bench, lib, fields[i+1], v)
		}
	}
	return scanner.Err()
}

// splitName splits a full benchmark name such as
// "BenchmarkLockUnlock/mode=serial/nodes=1/lib=locksmith-2" into the
// benchmark and the lib, dropping the -GOMAXPROCS suffix.
func splitName(name string) (benchmark, string, bool) {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	i := strings.LastIndex(name, "/lib=")
	if i < 0 {
		return "", "", false
	}
	return benchmark(name[:i]), name[i+len("/lib="):], true
}

func (r *results) add(bench benchmark, lib, unit string, v float64) {
	if r.values[bench] == nil {
		r.values[bench] = make(map[string]map[string][]float64)
		r.order = append(r.order, bench)
	}
	if r.values[bench][lib] == nil {
		r.values[bench][lib] = make(map[string][]float64)
		if !slices.Contains(r.libs, lib) {
			r.libs = append(r.libs, lib)
		}
	}
	r.values[bench][lib][unit] = append(r.values[bench][lib][unit], v)
}

// median returns the median of the values of bench, lib and unit, and false
// when there are none.
func (r *results) median(bench benchmark, lib, unit string) (float64, bool) {
	sorted := slices.Sorted(slices.Values(r.values[bench][lib][unit]))
	n := len(sorted)
	if n == 0 {
		return 0, false
	}
	return (sorted[(n-1)/2] + sorted[n/2]) / 2, true
}

// ratio returns median(bench, lib) / median(baseBench, base) in unit, and
// false when either is missing or the base is 0.
func (r *results) ratio(bench benchmark, lib string, baseBench benchmark, base, unit string) (float64, bool) {
	num, ok := r.median(bench, lib, unit)
	if !ok {
		return 0, false
	}
	den, ok := r.median(baseBench, base, unit)
	if !ok || den == 0 {
		return 0, false
	}
	return num / den, true
}

func isLocksmith(lib string) bool {
	return lib == "locksmith" || strings.HasPrefix(lib, "locksmith-")
}

// baseLib returns the lib that base stands for beside locksmith variant
// lib.
func baseLib(lib, base string) string {
	if base == peer {
		return "redsync" + strings.TrimPrefix(lib, "locksmith")
	}
	return base
}

// A goal bounds a ratio of every locksmith variant to a base, in the
// benchmarks whose names start with prefix.
type goal struct {
	prefix, base, unit string
	max                float64
}

// goals are the project's performance goals: at a realistic round trip,
// within 3% of the raw script floor and no slower than redsync on the same
// client; on loopback, serial N = 1 within 15% of redsync on the same
// client; allocations and bytes no more than redsync's on the same client.
var goals = []goal{
	{"BenchmarkDelayed/", "raw-script", "ns/op", 1.03},
	{"BenchmarkDelayed/", peer, "ns/op", 1},
	{"BenchmarkDelayed/", peer, "B/op", 1},
	{"BenchmarkDelayed/", peer, "allocs/op", 1},
	{"BenchmarkLockUnlock/mode=serial/nodes=1", peer, "ns/op", 1.15},
	{"BenchmarkLockUnlock/mode=serial/", peer, "B/op", 1},
	{"BenchmarkLockUnlock/mode=serial/", peer, "allocs/op", 1},
}

// verdict judges the goals that bound lib's ratios to base in bench: "" when
// none does, "met", or "MISSED" and what.
func (r *results) verdict(bench benchmark, lib, base string) string {
	judged := false
	var misses []string
	for _, g := range goals {
		if g.base != base || !strings.HasPrefix(string(bench), g.prefix) {
			continue
		}
		judged = true
		switch v, ok := r.ratio(bench, lib, bench, baseLib(lib, base), g.unit); {
		case !ok:
			misses = append(misses, "no "+g.unit)
		case v > g.max:
			misses = append(misses, fmt.Sprintf("%s %.3f > %.2f", g.unit, v, g.max))
		}
	}
	switch {
	case !judged:
		return ""
	case len(misses) > 0:
		return "MISSED: " + strings.Join(misses, ", ")
	}
	return "met"
}

// report prints the ratio table of the benchmarks other than BenchmarkGray
// and the semaphore benchmarks, then the delay of BenchmarkDelayed's
// proxies, then the semaphore tables, then the table of BenchmarkGray, each
// only when the input has results for it.
func report(w io.Writer, r *results) error {
	var gray, semaphores, others []benchmark
	for _, bench := range r.order {
		switch {
		case isGray(bench):
			gray = append(gray, bench)
		case isSemaphore(bench):
			semaphores = append(semaphores, bench)
		default:
			others = append(others, bench)
		}
	}
	printed := false
	if len(others) > 0 {
		if err := reportRatios(w, r, others); err != nil {
			return err
		}
		if err := reportPing(w, r, others); err != nil {
			return err
		}
		printed = true
	}
	if len(semaphores) > 0 {
		if printed {
			fmt.Fprintln(w)
		}
		if err := reportSemaphores(w, r, semaphores); err != nil {
			return err
		}
		printed = true
	}
	if len(gray) > 0 {
		if printed {
			fmt.Fprintln(w)
		}
		return reportGray(w, r, gray)
	}
	return nil
}

// reportRatios prints one row per benchmark, locksmith variant and base
// with results for both.
func reportRatios(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintln(w, "Ratios of medians, locksmith / base: below 1, locksmith is cheaper.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlib\tbase\t"+strings.Join(units, "\t")+"\tgoals\t")
	met, judged := 0, 0
	for _, bench := range benches {
		for _, lib := range r.libs {
			if !isLocksmith(lib) || r.values[bench][lib] == nil {
				continue
			}
			for _, base := range bases {
				other := baseLib(lib, base)
				if r.values[bench][other] == nil {
					continue
				}
				line := short(bench) + "\t" + lib + "\t" + other + "\t"
				for _, unit := range units {
					line += cell(r.ratio(bench, lib, bench, other, unit))
				}
				v := r.verdict(bench, lib, base)
				if v != "" {
					judged++
					if v == "met" {
						met++
					}
				}
				fmt.Fprintln(tw, line+v+"\t")
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Goals met on %d of %d rows.\n", met, judged)
	return nil
}

// The libs of BenchmarkDelayed's PING results: a PING sent to the N
// servers at once, without and through their proxies.
const (
	pingDirect = "ping-direct"
	pingProxy  = "ping-proxy"
)

// delayOf returns the delay each way in the name of a BenchmarkDelayed
// result, as "BenchmarkDelayed/delay=250us/nodes=1", and false when it has
// none or it does not parse.
func delayOf(bench benchmark) (time.Duration, bool) {
	for part := range strings.SplitSeq(string(bench), "/") {
		if v, ok := strings.CutPrefix(part, "delay="); ok {
			d, err := time.ParseDuration(v)
			return d, err == nil
		}
	}
	return 0, false
}

// reportPing prints, for the benches with a delay and both PING results,
// the delay their proxies really add each way: half the difference of the
// PING without and through them. At N > 1 the PING is the slowest of N
// round trips, the floor under a fan-out.
func reportPing(w io.Writer, r *results, benches []benchmark) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rows := 0
	for _, bench := range benches {
		set, ok := delayOf(bench)
		direct, okDirect := r.median(bench, pingDirect, "ns/op")
		proxy, okProxy := r.median(bench, pingProxy, "ns/op")
		if !ok || !okDirect || !okProxy {
			continue
		}
		if rows == 0 {
			fmt.Fprintln(w, "\nThe delay the proxy really adds, from a go-redis PING sent to the N nodes at once without and")
			fmt.Fprintln(w, "through the proxies (µs, medians)")
			fmt.Fprintln(tw, "benchmark\tPING direct\tPING proxied\tadded each way\tset each way\t")
		}
		rows++
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t\n", short(bench), direct/1e3, proxy/1e3, (proxy-direct)/2e3, float64(set)/1e3)
	}
	return tw.Flush()
}

// short returns bench without its Benchmark prefix.
func short(bench benchmark) string {
	return strings.TrimPrefix(string(bench), "Benchmark")
}

// cell formats a value for a table cell, "-" when there is none.
func cell(v float64, ok bool) string {
	if !ok {
		return "-\t"
	}
	return fmt.Sprintf("%.2f\t", v)
}
