package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/fencecheck"
)

// Every time in a history is an offset on one referee clock: the monotonic
// reading of time.Now in the test process, less the start of the run. All
// workers live in that process, so their times compare exactly.

// grant is one lock held by a worker. Its validity window runs from Acquired,
// when Lock returned, to End: the earlier of the holder starting to release
// it and the end of the validity the holder was told about (ValidUntil, or
// the cancellation of the context handed out with automatic renewal).
// A permit of a semaphore is a grant whose Resource is its slot, a lock
// of its own.
type grant struct {
	ID       int
	Resource string
	// Semaphore is the name of a permit's semaphore, "" for a lock.
	Semaphore string
	Kind      string
	Adapter   string // the driver adapter of the holder's Client
	// Start is when the Lock call began; Acquired when it returned.
	Start, Acquired, End time.Duration
	// Token is the fencing token, 0 for an unfenced lock.
	Token uint64
}

// rmw is one read-modify-write of a resource's counter by a holder.
type rmw struct {
	Grant      int
	Start, End time.Duration
}

// write is one write offered to the fenced store, in the order the store
// decided on them.
type write struct {
	Grant    int
	Resource string
	Token    uint64
	Accepted bool
}

// storedKey is a key found on a node when the run is over, with its PTTL
// in milliseconds (-1 when it never expires).
type storedKey struct {
	Node int
	Key  string
	PTTL int64
}

// overlap is a grant whose window began before the window of an earlier
// grant of the same resource had ended.
type overlap struct {
	Earlier, Later grant
}

func (o overlap) String() string {
	e, l := o.Earlier, o.Later
	return fmt.Sprintf("%s: window of grant %d (%s) overlaps grant %d (%s)", l.Resource, l.ID, l, e.ID, e)
}

// String describes g's kind, adapter and times.
func (g grant) String() string {
	kind := g.Kind
	if g.Adapter != "" {
		kind += " over " + g.Adapter
	}
	return fmt.Sprintf("%s, called at %v, window [%v, %v]", kind, g.Start, g.Acquired, g.End)
}

// overlaps returns every grant whose window starts before the window of an
// earlier grant of the same resource has ended, paired with the earlier
// grant whose window ends last.
func overlaps(grants []grant) []overlap {
	var out []overlap
	for _, gs := range byResource(grants) {
		slices.SortFunc(gs, func(a, b grant) int { return cmp.Compare(a.Acquired, b.Acquired) })
		var open grant // the window ending last among those started so far
		have := false
		for _, g := range gs {
			if g.End <= g.Acquired {
				continue // no validity left when Lock returned: no window
			}
			if have && g.Acquired < open.End {
				out = append(out, overlap{Earlier: open, Later: g})
			}
			if !have || g.End > open.End {
				open, have = g, true
			}
		}
	}
	slices.SortFunc(out, func(a, b overlap) int { return cmp.Compare(a.Later.ID, b.Later.ID) })
	return out
}

// overLimit is a permit granted while Limit or more other permits of its
// semaphore were valid.
type overLimit struct {
	Limit int
	Later grant
	Valid []grant // the permits valid when Later was granted
}

func (o overLimit) String() string {
	ids := make([]string, len(o.Valid))
	for i, v := range o.Valid {
		ids[i] = fmt.Sprint(v.ID)
	}
	return fmt.Sprintf("%s: permit %d (%s) granted while %d permits were valid (grants %s), limit %d",
		o.Later.Semaphore, o.Later.ID, o.Later, len(o.Valid), strings.Join(ids, ", "), o.Limit)
}

// overLimits returns the permits of semaphore sem whose window begins
// while limit or more other permits of it are valid: at that instant more
// than limit permits are valid. It also returns the most permits valid at
// once. Windows are half-open, as for overlaps: a permit granted at the
// instant another's window ends is not over the limit.
func overLimits(grants []grant, sem string, limit int) (over []overLimit, most int) {
	var permits []grant
	for _, g := range grants {
		if g.Semaphore == sem && g.End > g.Acquired { // an empty window is no window
			permits = append(permits, g)
		}
	}
	slices.SortFunc(permits, func(a, b grant) int { return cmp.Compare(a.Acquired, b.Acquired) })
	var valid []grant
	for _, g := range permits {
		valid = slices.DeleteFunc(valid, func(v grant) bool { return v.End <= g.Acquired })
		if len(valid) >= limit {
			over = append(over, overLimit{Limit: limit, Later: g, Valid: slices.Clone(valid)})
		}
		valid = append(valid, g)
		most = max(most, len(valid))
	}
	return over, most
}

// usedDuringOverlap counts the overlaps in which the earlier holder
// finished an update after the later one was granted: the two holders
// really used the resource at once, beyond what the windows' ends, some
// of which are only upper bounds, suggest.
func usedDuringOverlap(over []overlap, rmws []rmw) int {
	lastUse := map[int]time.Duration{}
	for _, u := range rmws {
		lastUse[u.Grant] = max(lastUse[u.Grant], u.End)
	}
	n := 0
	for _, o := range over {
		if lastUse[o.Earlier.ID] > o.Later.Acquired {
			n++
		}
	}
	return n
}

// lateUses counts the read-modify-writes that did not lie within their
// grant's window: the holder was descheduled between checking its validity
// and finishing the update. They are not failures of the lock, but they can
// lose updates, so the report shows them beside the lost updates.
func lateUses(grants []grant, rmws []rmw) int {
	windows := byGrant(grants)
	late := 0
	for _, u := range rmws {
		if outsideWindow(windows, u) {
			late++
		}
	}
	return late
}

// byGrant indexes grants by their ID.
func byGrant(grants []grant) map[int]grant {
	windows := make(map[int]grant, len(grants))
	for _, g := range grants {
		windows[g.ID] = g
	}
	return windows
}

// outsideWindow reports whether u did not lie within the window of its
// grant, or has no grant in windows.
func outsideWindow(windows map[int]grant, u rmw) bool {
	g, ok := windows[u.Grant]
	return !ok || u.Start < g.Acquired || u.End > g.End
}

// lateRaces returns, per resource, the pairs of read-modify-writes that
// ran at once on the shared clock with at least one of them outside its
// grant's window. With no overlapping windows, such a race is the only way
// to lose an update: the late holder checked its validity, then was
// descheduled past it before writing, which a lock cannot prevent and a
// fenced resource refuses. A lost update with no such race beside it
// would be a failure of the lock or of the recorder.
func lateRaces(grants []grant, rmws []rmw) map[string]int {
	byID := byGrant(grants)
	byResource := map[string][]rmw{}
	for _, u := range rmws {
		if g, ok := byID[u.Grant]; ok {
			byResource[g.Resource] = append(byResource[g.Resource], u)
		}
	}
	races := map[string]int{}
	for resource, us := range byResource {
		slices.SortFunc(us, func(a, b rmw) int { return cmp.Compare(a.Start, b.Start) })
		// Each update races every earlier one still running when it
		// started; open holds those, in no order.
		var open []rmw
		for _, u := range us {
			open = slices.DeleteFunc(open, func(o rmw) bool { return o.End <= u.Start })
			for _, o := range open {
				if outsideWindow(byID, o) || outsideWindow(byID, u) {
					races[resource]++
				}
			}
			open = append(open, u)
		}
	}
	return races
}

// explainedLosses returns how many of the lost updates of each resource
// its late races can explain: each race loses at most one update.
func explainedLosses(lost map[string]int64, races map[string]int) int64 {
	var n int64
	for resource, l := range lost {
		n += min(l, int64(races[resource]))
	}
	return n
}

// lostUpdates returns, per resource, how many completed read-modify-writes
// are missing from the counter's final value.
func lostUpdates(completed, final map[string]int64) map[string]int64 {
	lost := map[string]int64{}
	for resource, n := range completed {
		if d := n - final[resource]; d != 0 {
			lost[resource] = d
		}
	}
	return lost
}

// fenceViolations checks the fenced grants and the store's decisions:
// P1 and P2 of package fencecheck over the grants of each resource, and
// no write accepted from a holder after the store accepted one from a
// holder whose Lock call began after the first holder's had returned (the
// store let a superseded holder overwrite its successor). Writes rejected as
// stale are the fence working and are not violations.
func fenceViolations(grants []grant, writes []write) []string {
	var out []string
	fenced := map[string][]fencecheck.Grant{}
	byID := make(map[int]grant, len(grants))
	for _, g := range grants {
		byID[g.ID] = g
		if g.Token != 0 {
			fenced[g.Resource] = append(fenced[g.Resource], fencecheck.Grant{Start: time.Unix(0, int64(g.Start)), End: time.Unix(0, int64(g.Acquired)), Token: g.Token})
		}
	}
	for resource, gs := range fenced {
		for _, v := range fencecheck.Check(gs) {
			out = append(out, resource+": "+v)
		}
	}
	// newest is, per resource, the accepted write whose grant's Lock call
	// began last.
	newest := map[string]grant{}
	for _, w := range writes {
		if !w.Accepted {
			continue
		}
		g, ok := byID[w.Grant]
		if !ok {
			out = append(out, fmt.Sprintf("%s: write accepted from unknown grant %d", w.Resource, w.Grant))
			continue
		}
		if n, ok := newest[w.Resource]; ok && n.Start > g.Acquired {
			out = append(out, fmt.Sprintf("%s: write of grant %d (token %d) accepted after one of grant %d (token %d), which began after it was granted",
				w.Resource, g.ID, w.Token, n.ID, n.Token))
		}
		if n, ok := newest[w.Resource]; !ok || g.Start > n.Start {
			newest[w.Resource] = g
		}
	}
	slices.Sort(out)
	return out
}

// leakedKeys returns the keys that should not be on any node once every
// lock's TTL has passed: a lock key (it was neither released nor expired), a
// key of one of the semaphores (a slot, or the record of its limit, which
// lasts only as long as its permits), a fencing counter with a TTL
// (counters must never expire, or tokens would start over), and any key the
// workload does not write. Fencing counters without a TTL are meant to
// stay. Keys starting with ignorePrefix (filler data of the eviction
// control) are skipped when it is not empty. A semaphore's name has a hash
// tag, so that each of its keys starts with the name (see
// redlock.Semaphore).
func leakedKeys(keys []storedKey, resources, semaphores []string, ignorePrefix string) []string {
	isResource := make(map[string]bool, len(resources))
	for _, r := range resources {
		isResource[r] = true
	}
	semaphoreOf := func(key string) (string, bool) {
		for _, s := range semaphores {
			if strings.HasPrefix(key, s) {
				return s, true
			}
		}
		return "", false
	}
	var out []string
	for _, k := range keys {
		sem, isSemaphore := semaphoreOf(k.Key)
		switch {
		case ignorePrefix != "" && strings.HasPrefix(k.Key, ignorePrefix):
		case isSemaphore:
			out = append(out, fmt.Sprintf("node %d: key %q of semaphore %q (PTTL %dms)", k.Node, k.Key, sem, k.PTTL))
		case isResource[k.Key]:
			out = append(out, fmt.Sprintf("node %d: lock key %q (PTTL %dms)", k.Node, k.Key, k.PTTL))
		case isResource[counterResource(k.Key)]:
			if k.PTTL != -1 {
				out = append(out, fmt.Sprintf("node %d: fencing counter %q expires (PTTL %dms)", k.Node, k.Key, k.PTTL))
			}
		default:
			out = append(out, fmt.Sprintf("node %d: unexpected key %q", k.Node, k.Key))
		}
	}
	slices.Sort(out)
	return out
}

// counterResource returns the resource whose fencing counter key is key, or
// "" when key is not one: locksmith names the counter of resource r
// "{r}:fencing-token" (the resources here have no hash tag).
func counterResource(key string) string {
	inner, ok := strings.CutSuffix(key, "}:fencing-token")
	if !ok || !strings.HasPrefix(inner, "{") {
		return ""
	}
	return inner[1:]
}

func byResource(grants []grant) map[string][]grant {
	m := map[string][]grant{}
	for _, g := range grants {
		m[g.Resource] = append(m[g.Resource], g)
	}
	return m
}
