// Command ratios reads the output of the bench module's benchmarks (go test
// -bench, any -count) and prints how locksmith compares with the other
// contenders: for every benchmark, the median of each locksmith variant's
// ns/op, B/op and allocs/op divided by the median of redsync's, redislock's,
// the raw floor's and the raw script floor's (locksmith's scripts sent with
// no library), and of each variant's to redsync's over the same Redis
// client. Below 1, locksmith is cheaper. It then says whether
// locksmith (over go-redis, the client every contender shares) meets the
// project's targets.
//
// The results of BenchmarkDelayed (lock+unlock with every node behind a
// proxy adding a delay each way) get these ratios and, besides (see
// reportDelayed), the delay the proxy really adds, measured with PING,
// every contender's medians per lock+unlock, and whether each locksmith
// variant meets the goals of issue 39 at that round trip.
//
// The results of BenchmarkGray get a table of their own instead (see
// reportGray): per scenario and contender, the per-call p50, p99 and max,
// and whether each locksmith variant meets the gray-failure goal.
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
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
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

// The contenders locksmith is compared with, in the order printed.
var baselines = []string{"redsync", "redislock", "raw", "raw-script"}

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
// lines.
func (r *results) parse(in io.Reader) error {
	scanner := bufio.NewScanner(in)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
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
	byLib, ok := r.values[bench]
	if !ok {
		byLib = make(map[string]map[string][]float64)
		r.values[bench] = byLib
		r.order = append(r.order, bench)
	}
	byUnit, ok := byLib[lib]
	if !ok {
		byUnit = make(map[string][]float64)
		byLib[lib] = byUnit
		if !slices.Contains(r.libs, lib) {
			r.libs = append(r.libs, lib)
		}
	}
	byUnit[unit] = append(byUnit[unit], v)
}

// median returns the median of the values of bench, lib and unit, and false
// when there are none.
func (r *results) median(bench benchmark, lib, unit string) (float64, bool) {
	values := r.values[bench][lib][unit]
	if len(values) == 0 {
		return 0, false
	}
	sorted := slices.Clone(values)
	sort.Float64s(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[mid], true
	}
	return (sorted[mid-1] + sorted[mid]) / 2, true
}

// ratio returns median(lib) / median(base), and false when either is
// missing or the base is 0.
func (r *results) ratio(bench benchmark, lib, base, unit string) (float64, bool) {
	return r.ratioAcross(bench, lib, bench, base, unit)
}

// locksmithLibs returns the locksmith variants found, "locksmith" first.
func (r *results) locksmithLibs() []string {
	var libs []string
	for _, lib := range r.libs {
		if isLocksmith(lib) {
			libs = append(libs, lib)
		}
	}
	return libs
}

// report prints the ratio tables of the benchmarks other than
// BenchmarkGray, then the tables of BenchmarkDelayed, then the table of
// BenchmarkGray, each only when the input has results for it.
func report(w io.Writer, r *results) error {
	var gray, delayed, others []benchmark
	for _, bench := range r.order {
		switch {
		case isGray(bench):
			gray = append(gray, bench)
		case isDelayed(bench):
			delayed = append(delayed, bench)
			others = append(others, bench)
		default:
			others = append(others, bench)
		}
	}
	var sections []func() error
	if len(others) > 0 {
		sections = append(sections, func() error { return reportRatios(w, r, others) })
	}
	if len(delayed) > 0 {
		sections = append(sections, func() error { return reportDelayed(w, r, delayed) })
	}
	if len(gray) > 0 {
		sections = append(sections, func() error { return reportGray(w, r, gray) })
	}
	for i, section := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := section(); err != nil {
			return err
		}
	}
	return nil
}

// reportRatios prints, for benches, the ratio tables and the targets.
func reportRatios(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintln(w, "Ratios of medians, locksmith / other: below 1, locksmith is cheaper.")
	for _, base := range baselines {
		fmt.Fprintf(w, "\nlocksmith / %s\n", base)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "benchmark\tlib\t"+strings.Join(units, "\t")+"\t")
		for _, bench := range benches {
			if _, ok := r.values[bench][base]; !ok {
				continue
			}
			for _, lib := range r.locksmithLibs() {
				if _, ok := r.values[bench][lib]; !ok {
					continue
				}
				line := strings.TrimPrefix(string(bench), "Benchmark") + "\t" + lib + "\t"
				fmt.Fprintln(tw, line+r.ratioCells(bench, lib, base))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := reportSameClient(w, r, benches); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets, for locksmith over go-redis:")
	for _, t := range targets {
		fmt.Fprintln(w, "  "+t.check(r))
	}
	return nil
}

// ratioCells returns the ratios of lib to base in bench, one tab-ended
// cell per unit, "-" where one is missing.
func (r *results) ratioCells(bench benchmark, lib, base string) string {
	var cells strings.Builder
	for _, unit := range units {
		if v, ok := r.ratio(bench, lib, base, unit); ok {
			fmt.Fprintf(&cells, "%.2f\t", v)
		} else {
			cells.WriteString("-\t")
		}
	}
	return cells.String()
}

// sameClient pairs each locksmith variant with redsync over the same Redis
// client.
var sameClient = [][2]string{
	{"locksmith", "redsync"},
	{"locksmith-redigo", "redsync-redigo"},
	{"locksmith-rueidis", "redsync-rueidis"},
}

// reportSameClient prints, for benches, each locksmith variant's ratios to
// redsync over the same client, where the input has both.
func reportSameClient(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintln(w, "\nlocksmith / redsync on the same client")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlib\tpeer\t"+strings.Join(units, "\t")+"\t")
	for _, bench := range benches {
		for _, pair := range sameClient {
			lib, peer := pair[0], pair[1]
			if r.values[bench][lib] == nil || r.values[bench][peer] == nil {
				continue
			}
			line := strings.TrimPrefix(string(bench), "Benchmark") + "\t" + lib + "\t" + peer + "\t"
			fmt.Fprintln(tw, line+r.ratioCells(bench, lib, peer))
		}
	}
	return tw.Flush()
}

// A target bounds the ratio of locksmith's median to a baseline's in one
// benchmark and unit.
type target struct {
	what  string
	bench benchmark
	base  string
	unit  string
	max   float64 // the ratio locksmith / base must not exceed this
}

var targets = []target{
	{"allocs per lock+unlock at N=5 <= 1/3 of redsync's", "BenchmarkLockUnlock/mode=serial/nodes=5", "redsync", "allocs/op", 1.0 / 3},
	{"1-goroutine latency at N=1 within 15% of the raw floor", "BenchmarkLockUnlock/mode=serial/nodes=1", "raw", "ns/op", 1.15},
	{"1-goroutine latency at N=1 not above redislock's", "BenchmarkLockUnlock/mode=serial/nodes=1", "redislock", "ns/op", 1},
	// Throughput is the inverse of ns/op: 1.5 times the throughput is at
	// most 1/1.5 of the time per op.
	{"parallel throughput at N=5 >= 1.5x redsync's", "BenchmarkLockUnlock/mode=parallel/nodes=5", "redsync", "ns/op", 1 / 1.5},
}

func (t target) check(r *results) string {
	v, ok := r.ratio(t.bench, "locksmith", t.base, t.unit)
	if !ok {
		return fmt.Sprintf("%s: no data", t.what)
	}
	verdict := "MET"
	if v > t.max {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s: %s (%s ratio %.2f, limit %.2f)", t.what, verdict, t.unit, v, t.max)
}
