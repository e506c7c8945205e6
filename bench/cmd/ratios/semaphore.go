package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// The semaphore benchmarks; their results are named
// BenchmarkSemaphoreUncontended/nodes=N/limit=L/lib=LIB and
// BenchmarkSemaphoreContended/nodes=N/limit=L/hold=H/think=T/lib=LIB.
const (
	semUncontended = "BenchmarkSemaphoreUncontended/"
	semContended   = "BenchmarkSemaphoreContended/"
)

// The libs of the semaphore benchmarks.
const (
	semLock      = "locksmith-lock"      // Lock + Unlock, the base
	semSemaphore = "locksmith-semaphore" // Acquire + Unlock
	semRivals    = "redsync-mutexes"     // prefix of the contended rivals
)

// The semaphore goals: uncontended, Acquire + Unlock at most semMaxRatio
// times Lock + Unlock; contended, all permits busy at least semMinBusy
// percent of the time someone waits, and at least semMinSpeedup times the
// grants per second of every rival.
const (
	semMaxRatio   = 1.15
	semMinBusy    = 90
	semMinSpeedup = 3
)

func isSemaphore(bench benchmark) bool {
	return strings.HasPrefix(string(bench), semUncontended) || strings.HasPrefix(string(bench), semContended)
}

// reportSemaphores prints the table of the uncontended semaphore results,
// then that of the contended ones, each only when benches has some.
func reportSemaphores(w io.Writer, r *results, benches []benchmark) error {
	var uncontended, contended []benchmark
	for _, bench := range benches {
		if strings.HasPrefix(string(bench), semUncontended) {
			uncontended = append(uncontended, bench)
		} else {
			contended = append(contended, bench)
		}
	}
	if len(uncontended) > 0 {
		if err := reportUncontended(w, r, uncontended); err != nil {
			return err
		}
	}
	if len(contended) > 0 {
		if len(uncontended) > 0 {
			fmt.Fprintln(w)
		}
		return reportContended(w, r, contended)
	}
	return nil
}

// reportUncontended prints, per benchmark, the medians of lock and
// semaphore in µs, the ratios semaphore / lock and whether the goal is met.
func reportUncontended(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintf(w, "Semaphores, uncontended: Acquire+Unlock of a permit / Lock+Unlock, ratios of medians.\n")
	fmt.Fprintf(w, "Goal: ns/op <= %.2f.\n", semMaxRatio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlock µs\tsemaphore µs\tns/op\tB/op\tallocs/op\tgoal\t")
	met := 0
	for _, bench := range benches {
		line := short(bench) + "\t"
		for _, lib := range []string{semLock, semSemaphore} {
			v, ok := r.median(bench, lib, "ns/op")
			line += cell(v/1e3, ok)
		}
		for _, unit := range units {
			line += cell(r.ratio(bench, semSemaphore, bench, semLock, unit))
		}
		verdict := "met"
		switch v, ok := r.ratio(bench, semSemaphore, bench, semLock, "ns/op"); {
		case !ok:
			verdict = "MISSED: no ns/op"
		case v > semMaxRatio:
			verdict = fmt.Sprintf("MISSED: %.3f > %.2f", v, semMaxRatio)
		default:
			met++
		}
		fmt.Fprintln(tw, line+verdict+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Goal met on %d of %d rows.\n", met, len(benches))
	return nil
}

// semContendedUnits are the columns of the contended table.
var semContendedUnits = []string{"grants/s", "busy-%", "wait-p50-ms", "wait-p99-ms", "rounds/grant", "partial/grant", "full/grant"}

// reportContended prints, per benchmark and lib, the medians of the
// contended metrics, the semaphore's grants/s over the row's, and for the
// semaphore whether the goals are met.
func reportContended(w io.Writer, r *results, benches []benchmark) error {
	fmt.Fprintf(w, "Semaphores, contended: medians. Goal for %s: busy-%% >= %d and grants/s >= %dx every %s row.\n",
		semSemaphore, semMinBusy, semMinSpeedup, semRivals)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tlib\t"+strings.Join(semContendedUnits, "\t")+"\tsemaphore/row\tgoal\t")
	met, judged := 0, 0
	for _, bench := range benches {
		for _, lib := range r.libs {
			if r.values[bench][lib] == nil {
				continue
			}
			line := short(bench) + "\t" + lib + "\t"
			for _, unit := range semContendedUnits {
				line += cell(r.median(bench, lib, unit))
			}
			verdict := "-"
			if lib == semSemaphore {
				line += "-\t"
				judged++
				verdict = r.contendedVerdict(bench)
				if verdict == "met" {
					met++
				}
			} else {
				line += cell(r.ratio(bench, semSemaphore, bench, lib, "grants/s"))
			}
			fmt.Fprintln(tw, line+verdict+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Goals met on %d of %d rows.\n", met, judged)
	return nil
}

// contendedVerdict says whether the semaphore meets the contended goals in
// bench: "met", or "MISSED" and why.
func (r *results) contendedVerdict(bench benchmark) string {
	var misses []string
	if busy, ok := r.median(bench, semSemaphore, "busy-%"); !ok {
		misses = append(misses, "no busy-%")
	} else if busy < semMinBusy {
		misses = append(misses, fmt.Sprintf("busy %.1f%% < %d%%", busy, semMinBusy))
	}
	rivals := 0
	for _, lib := range r.libs {
		if !strings.HasPrefix(lib, semRivals) || r.values[bench][lib] == nil {
			continue
		}
		rivals++
		if v, ok := r.ratio(bench, semSemaphore, bench, lib, "grants/s"); !ok {
			misses = append(misses, "no grants/s of "+lib)
		} else if v < semMinSpeedup {
			misses = append(misses, fmt.Sprintf("%.2fx %s", v, lib))
		}
	}
	if rivals == 0 {
		misses = append(misses, "no "+semRivals+" row")
	}
	if len(misses) == 0 {
		return "met"
	}
	return "MISSED: " + strings.Join(misses, ", ")
}
