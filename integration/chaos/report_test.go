package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is what a run writes to results/<profile>.json.
type report struct {
	Profile string        `json:"profile"`
	Seed    uint64        `json:"seed"`
	Date    string        `json:"date"`
	Phases  []phaseReport `json:"phases"`
}

// phaseReport holds the figures of one configuration.
type phaseReport struct {
	Name string `json:"name"`
	// Control is true for a negative control, which must show violations.
	Control    bool     `json:"control"`
	Conditions string   `json:"conditions"`
	Workers    int      `json:"workers"`
	Resources  int      `json:"resources"`
	TTLs       []string `json:"ttls"`
	Duration   string   `json:"duration"`

	Faults      map[string]faultStat `json:"faults"`
	FaultsTotal int                  `json:"faults_total"`

	Attempted int `json:"attempted"`
	Granted   int `json:"granted"`
	Failed    int `json:"failed"`
	// FailedHeld counts the failures refused by enough nodes that no
	// quorum could grant (the resource was held), FailedSkipped those
	// whose last round skipped a node behind or failing.
	FailedHeld    int            `json:"failed_held_by_another_owner"`
	FailedSkipped int            `json:"failed_with_a_node_skipped"`
	GrantedBy     map[string]int `json:"granted_by_kind"`
	// GrantedByAdapter counts the grants by the adapter of the
	// holder's Client.
	GrantedByAdapter map[string]int `json:"granted_by_adapter"`
	Availability     float64        `json:"availability"`
	LockP50          string         `json:"lock_p50"`
	LockP99          string         `json:"lock_p99"`

	Overlaps     int `json:"overlapping_windows"`
	OverlapsUsed int `json:"overlaps_with_updates_by_both"`
	// OverlapsByKind counts the overlaps by the kind of the earlier
	// holder, whose window the later grant fell into.
	OverlapsByKind  map[string]int `json:"overlaps_by_earlier_kind,omitempty"`
	FenceViolations int            `json:"fence_violations"`
	// Observe checks the election's Observe streams; a stream that did
	// not end on "no leader" is a violation.
	Observe observeReport `json:"observe"`
	// Semaphores holds the permits and checks of each semaphore; the
	// over-limit windows are violations.
	Semaphores []semaphoreReport `json:"semaphores"`
	// LostUpdates counts the updates missing from the counters; the
	// violations are those that no late race explains (LostToLate).
	LostUpdates int64 `json:"lost_updates"`
	LostToLate  int64 `json:"lost_updates_explained_by_late_updates"`
	LeakedKeys  int   `json:"leaked_keys"`
	Unexpected  int   `json:"unexpected_errors"`

	StaleRejected int `json:"stale_writes_rejected"`
	FencedWrites  int `json:"fenced_writes_accepted"`
	Updates       int `json:"counter_updates"`
	LateUpdates   int `json:"updates_outside_window"`
	SkippedUses   int `json:"uses_skipped_validity_passed"`
	Abandoned     int `json:"locks_abandoned_to_expire"`
	// LateCancels counts renewed locks whose context was seen cancelled
	// for the loss only after the validity had ended (the process ran its
	// timers late, or the renewal missed a change of the validity),
	// MaxCancelDelay the longest delay; both also by worker kind.
	LateCancels          int               `json:"late_cancellations"`
	MaxCancelDelay       string            `json:"max_cancellation_delay"`
	LateCancelsByKind    map[string]int    `json:"late_cancellations_by_kind,omitempty"`
	MaxCancelDelayByKind map[string]string `json:"max_cancellation_delay_by_kind,omitempty"`

	// Examples are the first violations of each checker.
	Examples []string `json:"examples,omitempty"`
}

// semaphoreReport holds the figures of one semaphore in a phase.
type semaphoreReport struct {
	Name    string `json:"name"`
	Limit   int    `json:"limit"`
	Workers int    `json:"workers"`
	// Granted counts the permits whose window was not empty.
	Granted   int `json:"permits_granted"`
	MostValid int `json:"most_permits_valid_at_once"`
	OverLimit int `json:"over_limit_windows"`
	// ControlOverLimit counts the over-limit windows of the same permits
	// checked against a limit one lower: a negative control of the
	// checker, which must find some, as the workers reach the limit.
	ControlOverLimit int `json:"over_limit_windows_at_limit_minus_one"`
}

func (p phaseReport) violations() int64 {
	n := int64(p.Overlaps+p.FenceViolations+p.LeakedKeys+p.Observe.NotIdle) + p.LostUpdates - p.LostToLate
	for _, s := range p.Semaphores {
		n += int64(s.OverLimit)
	}
	return n
}

// summarize runs the checkers over a phase's history.
func summarize(p phaseReport, rec *recorder, inj *injector, keys []storedKey, w workload, ignorePrefix string) phaseReport {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	p.Faults = map[string]faultStat{}
	for k, s := range inj.stats {
		p.Faults[k] = *s
	}
	p.FaultsTotal = inj.n
	if rec.pauses > 0 {
		p.Faults[faultClientPause] = faultStat{Count: rec.pauses, Total: rec.pauseTime}
	}
	p.GrantedBy = map[string]int{}
	for k, n := range rec.attempted {
		p.Attempted += n
		p.Granted += rec.granted[k]
		p.Failed += rec.failed[k]
		p.GrantedBy[k] = rec.granted[k]
	}
	p.FailedHeld, p.FailedSkipped = rec.failedHeld, rec.failedSkipped
	p.GrantedByAdapter = map[string]int{}
	for _, g := range rec.grants {
		p.GrantedByAdapter[g.Adapter]++
	}
	if p.Attempted > 0 {
		p.Availability = float64(p.Granted) / float64(p.Attempted)
	}
	p.LockP50, p.LockP99 = percentile(rec.latencies, 0.50), percentile(rec.latencies, 0.99)

	over := overlaps(rec.grants)
	fence := fenceViolations(rec.grants, rec.store.log)
	completed, final := rec.counters.snapshot()
	lost := lostUpdates(completed, final)
	var semaphores []string
	for _, spec := range w.Semaphores {
		semaphores = append(semaphores, spec.Name)
	}
	leaks := leakedKeys(keys, w.checkedResources(), semaphores, ignorePrefix)
	p.Overlaps, p.FenceViolations, p.LeakedKeys, p.Unexpected = len(over), len(fence), len(leaks), len(rec.unexpect)
	p.OverlapsUsed = usedDuringOverlap(over, rec.rmws)
	p.OverlapsByKind = overlapsByKind(over)
	for _, o := range over[:min(3, len(over))] {
		p.Examples = append(p.Examples, o.String())
	}
	for _, spec := range w.Semaphores {
		over, most := overLimits(rec.grants, spec.Name, spec.Limit)
		control, _ := overLimits(rec.grants, spec.Name, spec.Limit-1)
		s := semaphoreReport{Name: spec.Name, Limit: spec.Limit, Workers: spec.Workers, MostValid: most, OverLimit: len(over), ControlOverLimit: len(control)}
		for _, g := range rec.grants {
			if g.Semaphore == spec.Name && g.End > g.Acquired {
				s.Granted++
			}
		}
		p.Semaphores = append(p.Semaphores, s)
		for _, o := range over[:min(3, len(over))] {
			p.Examples = append(p.Examples, o.String())
		}
	}
	for _, n := range lost {
		p.LostUpdates += n
	}
	p.LostToLate = explainedLosses(lost, lateRaces(rec.grants, rec.rmws))
	for _, w := range rec.store.log {
		if w.Accepted {
			p.FencedWrites++
		} else {
			p.StaleRejected++
		}
	}
	p.Updates = len(rec.rmws)
	p.LateUpdates = lateUses(rec.grants, rec.rmws)
	p.SkippedUses, p.Abandoned = rec.skipped, rec.abandoned
	p.LateCancelsByKind, p.MaxCancelDelayByKind = maps.Clone(rec.lateCancels), map[string]string{}
	var maxDelay time.Duration
	for k, n := range rec.lateCancels {
		p.LateCancels += n
		maxDelay = max(maxDelay, rec.maxCancelDelay[k])
		p.MaxCancelDelayByKind[k] = rec.maxCancelDelay[k].Round(time.Millisecond).String()
	}
	p.MaxCancelDelay = maxDelay.Round(time.Millisecond).String()
	for _, list := range [][]string{fence, leaks, rec.unexpect} {
		p.Examples = append(p.Examples, list[:min(3, len(list))]...)
	}
	for _, r := range slices.Sorted(maps.Keys(lost)) {
		p.Examples = append(p.Examples, fmt.Sprintf("%s: %d lost updates", r, lost[r]))
	}
	return p
}

// overlapsByKind counts overlaps by the kind of their earlier grant.
func overlapsByKind(over []overlap) map[string]int {
	m := map[string]int{}
	for _, o := range over {
		m[o.Earlier.Kind]++
	}
	return m
}

// perKind formats counts by worker kind as "kind n, kind n", in kind
// order, each followed by what detail returns for its kind, or "-" when
// there are none.
func perKind(m map[string]int, detail ...func(kind string) string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == 0 {
			continue
		}
		part := fmt.Sprintf("%s %d", k, m[k])
		for _, d := range detail {
			part += d(k)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func percentile(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))].Round(10 * time.Microsecond).String()
}

// print writes the report as tables, one column per phase.
func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "chaos report: profile %s, seed %d, %s\n\n", r.Profile, r.Seed, r.Date)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(p phaseReport) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, p := range r.Phases {
			fmt.Fprintf(tw, "%s\t", f(p))
		}
		fmt.Fprintln(tw)
	}
	row("", func(p phaseReport) string { return p.Name })
	row("duration", func(p phaseReport) string { return p.Duration })
	row("workers / resources", func(p phaseReport) string { return fmt.Sprintf("%d / %d", p.Workers, p.Resources) })
	var kinds []string
	for _, p := range r.Phases {
		for k := range p.Faults {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		row("fault: "+k, func(p phaseReport) string {
			s, ok := p.Faults[k]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%d, %v", s.Count, s.Total.Round(time.Second))
		})
	}
	row("injected faults", func(p phaseReport) string { return fmt.Sprint(p.FaultsTotal) })
	row("Lock and Acquire calls attempted", func(p phaseReport) string { return fmt.Sprint(p.Attempted) })
	row("granted", func(p phaseReport) string { return fmt.Sprint(p.Granted) })
	row("failed", func(p phaseReport) string { return fmt.Sprint(p.Failed) })
	row("  refused by enough nodes that no quorum could grant", func(p phaseReport) string { return fmt.Sprint(p.FailedHeld) })
	row("  with a node skipped (behind or failing)", func(p phaseReport) string { return fmt.Sprint(p.FailedSkipped) })
	row("granted by kind", func(p phaseReport) string { return perKind(p.GrantedBy) })
	row("granted by adapter", func(p phaseReport) string { return perKind(p.GrantedByAdapter) })
	row("availability (granted/attempted)", func(p phaseReport) string { return fmt.Sprintf("%.2f%%", 100*p.Availability) })
	row("Lock and Acquire latency p50 / p99", func(p phaseReport) string { return p.LockP50 + " / " + p.LockP99 })
	row("VIOLATIONS: overlapping windows", func(p phaseReport) string { return fmt.Sprint(p.Overlaps) })
	row("  of which both holders updated", func(p phaseReport) string { return fmt.Sprint(p.OverlapsUsed) })
	row("  by the earlier holder's kind", func(p phaseReport) string { return perKind(p.OverlapsByKind) })
	row("VIOLATIONS: fencing", func(p phaseReport) string { return fmt.Sprint(p.FenceViolations) })
	var semaphores []semaphoreReport // the same in every phase
	if len(r.Phases) > 0 {
		semaphores = r.Phases[0].Semaphores
	}
	for i, s := range semaphores {
		sem := func(f func(s semaphoreReport) string) func(p phaseReport) string {
			return func(p phaseReport) string {
				if i >= len(p.Semaphores) {
					return "-"
				}
				return f(p.Semaphores[i])
			}
		}
		label := fmt.Sprintf("semaphore %s, limit %d", s.Name, s.Limit)
		row(label+": workers / permits granted", sem(func(s semaphoreReport) string { return fmt.Sprintf("%d / %d", s.Workers, s.Granted) }))
		row("  most permits valid at once", sem(func(s semaphoreReport) string { return fmt.Sprint(s.MostValid) }))
		row("  VIOLATIONS: over-limit windows", sem(func(s semaphoreReport) string { return fmt.Sprint(s.OverLimit) }))
		row("  checker control: over-limit windows at limit - 1", sem(func(s semaphoreReport) string { return fmt.Sprint(s.ControlOverLimit) }))
	}
	row("Observe streams / states delivered", func(p phaseReport) string {
		return fmt.Sprintf("%d / %d", p.Observe.Streams, p.Observe.States)
	})
	row("VIOLATIONS: Observe streams not ending on no leader", func(p phaseReport) string { return fmt.Sprint(p.Observe.NotIdle) })
	row("  Observe states older than one delivered before", func(p phaseReport) string { return fmt.Sprint(p.Observe.TermRegressions) })
	row("VIOLATIONS: lost updates no late update explains", func(p phaseReport) string { return fmt.Sprint(p.LostUpdates - p.LostToLate) })
	row("lost updates explained by late updates", func(p phaseReport) string { return fmt.Sprint(p.LostToLate) })
	row("VIOLATIONS: leaked keys", func(p phaseReport) string { return fmt.Sprint(p.LeakedKeys) })
	row("unexpected errors", func(p phaseReport) string { return fmt.Sprint(p.Unexpected) })
	row("fenced writes accepted", func(p phaseReport) string { return fmt.Sprint(p.FencedWrites) })
	row("stale fenced writes rejected", func(p phaseReport) string { return fmt.Sprint(p.StaleRejected) })
	row("counter updates", func(p phaseReport) string { return fmt.Sprint(p.Updates) })
	row("updates outside their window", func(p phaseReport) string { return fmt.Sprint(p.LateUpdates) })
	row("uses skipped (validity passed)", func(p phaseReport) string { return fmt.Sprint(p.SkippedUses) })
	row("locks left to expire", func(p phaseReport) string { return fmt.Sprint(p.Abandoned) })
	row("lost locks' contexts closed after the validity (max delay)", func(p phaseReport) string {
		return fmt.Sprintf("%d (%s)", p.LateCancels, p.MaxCancelDelay)
	})
	row("  by kind (max delay)", func(p phaseReport) string {
		return perKind(p.LateCancelsByKind, func(k string) string { return " (" + p.MaxCancelDelayByKind[k] + ")" })
	})
	tw.Flush()
	for _, p := range r.Phases {
		fmt.Fprintf(w, "\n%s: %s\n", p.Name, p.Conditions)
		for _, e := range p.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// write stores the report as indented JSON at path.
func (r report) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ttlNames formats TTLs for the report.
func ttlNames(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
