package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// grayBenchmark is the name of the gray-failure benchmark; its results are
// named grayBenchmark + "/scenario=NAME/lib=LIB".
const grayBenchmark = "BenchmarkGray"

// grayHealthy is the scenario every other is compared with.
const grayHealthy = benchmark(grayBenchmark + "/scenario=healthy")

// The gray-failure goal, for every locksmith variant in every scenario but
// the healthy one: a p99 at most grayMaxSlowdown times its own healthy p99,
// below grayRival's p99 in the same scenario, and no failed call.
const (
	grayMaxSlowdown = 1.5
	grayRival       = "redsync"
)

// grayRivals are the contenders whose p99 each row is compared with, in
// the order printed.
var grayRivals = []string{"redsync", "redsync-failfast", "raw"}

func isGray(bench benchmark) bool {
	return strings.HasPrefix(string(bench), grayBenchmark+"/")
}

// scenario returns the scenario name of a BenchmarkGray result.
func scenario(bench benchmark) string {
	return strings.TrimPrefix(string(bench), grayBenchmark+"/scenario=")
}

// reportGray prints one row per scenario in benches and contender: the
// medians over runs of the per-call p50, p99 and max in ms and of the
// share of failed calls, the row's p99 over its own healthy p99 and over
// each rival's p99 in the same scenario, and for locksmith's rows outside
// the healthy scenario whether the goal is met.
func reportGray(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintf(w, "Gray failures: lock+unlock on 5 nodes, one of them healthy, stopped, slow or refusing;\n")
	fmt.Fprintf(w, "per call in ms, medians over runs. Goal for locksmith outside the healthy scenario:\n")
	fmt.Fprintf(w, "p99 <= %.1fx its own healthy p99, below %s's p99 in the same scenario, no failed call.\n\n", grayMaxSlowdown, grayRival)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "scenario\tlib\tp50\tp99\tmax\tfailed\tp99/healthy\t"
	for _, rival := range grayRivals {
		header += "p99/" + rival + "\t"
	}
	fmt.Fprintln(tw, header+"goal\t")
	met, judged := 0, 0
	for _, bench := range benches {
		for _, lib := range r.libs {
			if _, ok := r.values[bench][lib]; !ok {
				continue
			}
			line := scenario(bench) + "\t" + lib + "\t"
			for _, unit := range []string{"p50-ms", "p99-ms", "max-ms"} {
				line += cell(r.median(bench, lib, unit))
			}
			line += percent(r.median(bench, lib, "failed/op"))
			line += cell(r.ratio(bench, lib, grayHealthy, lib, "p99-ms"))
			for _, rival := range grayRivals {
				if rival == lib {
					line += "-\t"
					continue
				}
				line += cell(r.ratio(bench, lib, bench, rival, "p99-ms"))
			}
			verdict := "-"
			if bench != grayHealthy && isLocksmith(lib) {
				judged++
				verdict = r.grayVerdict(bench, lib)
				if verdict == "met" {
					met++
				}
			}
			fmt.Fprintln(tw, line+verdict+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGoal met on %d of %d locksmith rows outside the healthy scenario.\n", met, judged)
	return nil
}

// grayVerdict says whether lib meets the gray-failure goal in bench: "met",
// or "MISSED" and why.
func (r *results) grayVerdict(bench benchmark, lib string) string {
	var misses []string
	if failed, ok := r.median(bench, lib, "failed/op"); !ok {
		misses = append(misses, "no failed/op")
	} else if failed > 0 {
		misses = append(misses, fmt.Sprintf("%.1f%% failed", failed*100))
	}
	if v, ok := r.ratio(bench, lib, grayHealthy, lib, "p99-ms"); !ok {
		misses = append(misses, "no healthy p99")
	} else if v > grayMaxSlowdown {
		misses = append(misses, fmt.Sprintf("%.2fx healthy", v))
	}
	if v, ok := r.ratio(bench, lib, bench, grayRival, "p99-ms"); !ok {
		misses = append(misses, "no "+grayRival+" p99")
	} else if v >= 1 {
		misses = append(misses, fmt.Sprintf("%.2fx %s", v, grayRival))
	}
	if len(misses) == 0 {
		return "met"
	}
	return "MISSED: " + strings.Join(misses, ", ")
}

// percent formats a share as a percentage cell, "-" when there is none.
func percent(v float64, ok bool) string {
	if !ok {
		return "-\t"
	}
	return fmt.Sprintf("%.1f%%\t", v*100)
}
