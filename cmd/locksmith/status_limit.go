package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// semaphoreStatus is what status --limit reports for one semaphore.
type semaphoreStatus struct {
	Key      string `json:"key"`
	Limit    int    `json:"limit"`
	Held     int    `json:"held"` // live permits
	Quorum   int    `json:"quorum"`
	Answered int    `json:"answered"`
	// Nodes holds the limit recorded on each node.
	Nodes []limitStatus `json:"nodes"`
	// Permits holds the slots that some node holds, in slot order; [] for
	// none.
	Permits []permitStatus `json:"permits"`
}

type limitStatus struct {
	Node  string `json:"node"`
	Limit int    `json:"limit"` // 0 without a record
	Error string `json:"error,omitempty"`
}

// permitStatus is one slot of a semaphore, read as status reads a lock.
type permitStatus struct {
	Slot int `json:"slot"`
	keyStatus
	// ValidMilli is how long a live permit stays valid at the most.
	ValidMilli int64 `json:"valid_ms,omitempty"`
}

func (a *app) semaphoreState(in *redlock.SemaphoreInspection, nodes nodeList) semaphoreStatus {
	ss := semaphoreStatus{Key: in.Name, Limit: in.Limit, Held: in.Held, Permits: []permitStatus{}}
	for slot := range in.Slots {
		ks := a.keyStatus(&in.Slots[slot], nodes, false)
		ss.Quorum, ss.Answered = ks.Quorum, ks.Answered
		if slot == 0 {
			for i, n := range ks.Nodes {
				ss.Nodes = append(ss.Nodes, limitStatus{Node: n.Node, Limit: in.Limits[i], Error: n.Error})
			}
		}
		if !slices.ContainsFunc(ks.Nodes, func(n nodeStatus) bool { return n.Exists }) {
			continue
		}
		ps := permitStatus{Slot: slot, keyStatus: ks}
		if until := in.Slots[slot].HeldUntil; ks.Held && !until.IsZero() {
			ps.ValidMilli = max(time.Until(until).Milliseconds(), 0)
		}
		ss.Permits = append(ss.Permits, ps)
	}
	return ss
}

func (a *app) printSemaphores(report statusReport) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tNODE\tLIMIT\tSLOTS HELD")
	for _, ss := range report.Semaphores {
		for i, n := range ss.Nodes {
			if n.Error != "" {
				fmt.Fprintf(w, "%s\t%s\terror: %s\t\n", ss.Key, n.Node, n.Error)
				continue
			}
			limit := "none"
			if n.Limit != 0 {
				limit = strconv.Itoa(n.Limit)
			}
			var slots []string
			for _, p := range ss.Permits {
				if p.Nodes[i].Exists {
					slots = append(slots, strconv.Itoa(p.Slot))
				}
			}
			if len(slots) == 0 {
				slots = []string{"-"}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", ss.Key, n.Node, limit, strings.Join(slots, " "))
		}
	}
	w.Flush()
	w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKEY\tSLOT\tPERMIT\tNODES\tVALUE\tVALID FOR")
	for _, ss := range report.Semaphores {
		for _, p := range ss.Permits {
			value, valid := "-", "not held by a quorum"
			if p.Held {
				value = p.Value
				valid = "no expiry"
				if p.HeldUntil != "" {
					valid = "at most " + (time.Duration(p.ValidMilli) * time.Millisecond).String()
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%s\t%d of %d\t%s\t%s\n", ss.Key, p.Slot, p.Key, p.Holders, len(p.Nodes), value, valid)
		}
	}
	w.Flush()
	for _, ss := range report.Semaphores {
		if ss.Answered < ss.Quorum {
			fmt.Fprintf(a.stdout, "%s: unknown: only %d of %d nodes answered (quorum %d)\n", ss.Key, ss.Answered, len(ss.Nodes), ss.Quorum)
			continue
		}
		fmt.Fprintf(a.stdout, "%s: %d of %d permits held by a quorum (quorum %d of %d nodes)\n", ss.Key, ss.Held, ss.Limit, ss.Quorum, len(ss.Nodes))
		others := make(map[int]int) // nodes by the other limit they record
		for _, n := range ss.Nodes {
			if n.Error == "" && n.Limit != 0 && n.Limit != ss.Limit {
				others[n.Limit]++
			}
		}
		for _, limit := range slices.Sorted(maps.Keys(others)) {
			fmt.Fprintf(a.stdout, "%s: %d of %d nodes record limit %d, not %d: a run with --limit %d fails while the record lasts\n", ss.Key, others[limit], len(ss.Nodes), limit, ss.Limit, ss.Limit)
		}
	}
}
