package chaos

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// win is a grant of resource r whose window is [from, to] ms, its Lock call
// having started 1ms before.
func win(id int, r string, from, to int) grant {
	return grant{ID: id, Resource: r, Kind: kindPlain, Start: ms(from - 1), Acquired: ms(from), End: ms(to)}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		name   string
		grants []grant
		want   int
	}{
		{"one after another", []grant{win(1, "a", 0, 10), win(2, "a", 10, 20), win(3, "a", 25, 30)}, 0},
		{"other resources may overlap", []grant{win(1, "a", 0, 10), win(2, "b", 5, 15)}, 0},
		{"empty window is ignored", []grant{win(1, "a", 0, 10), win(2, "a", 5, 5)}, 0},
		{"recorded out of order", []grant{win(2, "a", 10, 20), win(1, "a", 0, 10)}, 0},
		{"second starts inside first", []grant{win(1, "a", 0, 10), win(2, "a", 9, 20)}, 1},
		{"inside a long earlier window", []grant{win(1, "a", 0, 100), win(2, "a", 10, 20), win(3, "a", 30, 40)}, 2},
		{"same start", []grant{win(1, "a", 0, 10), win(2, "a", 0, 10)}, 1},
	}
	for _, tt := range tests {
		if got := overlaps(tt.grants); len(got) != tt.want {
			t.Errorf("%s: overlaps %q, want %d", tt.name, got, tt.want)
		}
	}
}

// TestOverlappingSoFar checks what a control's early stop relies on: an
// overlap among the grants recorded so far stays one as grants are added,
// in any order.
func TestOverlappingSoFar(t *testing.T) {
	rec := newRecorder()
	for _, g := range []grant{win(1, "a", 0, 10), win(2, "a", 10, 20)} {
		rec.addGrant(g)
	}
	if rec.overlapping() {
		t.Fatal("windows one after another: overlapping, want none")
	}
	rec.addGrant(win(3, "a", 15, 30))
	for _, g := range []grant{win(4, "a", 5, 100), win(5, "a", 40, 50), win(6, "b", 0, 100)} {
		if !rec.overlapping() {
			t.Fatalf("before adding grant %d: no overlap, want the one of grants 2 and 3", g.ID)
		}
		rec.addGrant(g)
	}
}

// permitWin is a permit of semaphore sem on slot 0 whose window is
// [from, to] ms.
func permitWin(id int, sem string, from, to int) grant {
	g := win(id, sem+":permit:0", from, to)
	g.Semaphore, g.Kind = sem, kindSemaphore
	return g
}

func TestOverLimits(t *testing.T) {
	tests := []struct {
		name     string
		grants   []grant
		limit    int
		want     int
		wantMost int
	}{
		{"at the limit", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 2, 12), permitWin(3, "s", 4, 14)}, 3, 0, 3},
		{"over the limit", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 2, 12), permitWin(3, "s", 4, 14), permitWin(4, "s", 9, 20)}, 3, 1, 4},
		{"windows that only touch", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 0, 10), permitWin(3, "s", 10, 20), permitWin(4, "s", 10, 20)}, 2, 0, 2},
		{"limit one: each later grant inside the first", []grant{permitWin(1, "s", 0, 100), permitWin(2, "s", 10, 20), permitWin(3, "s", 30, 40)}, 1, 2, 2},
		{"same start", []grant{permitWin(1, "s", 5, 10), permitWin(2, "s", 5, 10)}, 1, 1, 2},
		{"recorded out of order", []grant{permitWin(2, "s", 10, 20), permitWin(1, "s", 0, 10)}, 1, 0, 1},
		{"empty window is ignored", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 5, 5)}, 1, 0, 1},
		{"other semaphores and locks are not counted", []grant{permitWin(1, "s", 0, 10), permitWin(2, "t", 0, 10), win(3, "s", 0, 10)}, 1, 0, 1},
		{"limit one lower: over whenever the limit is reached", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 2, 12), permitWin(3, "s", 4, 14)}, 2, 1, 3},
		{"limit zero: every permit is over", []grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 20, 30)}, 0, 2, 1},
	}
	for _, tt := range tests {
		over, most := overLimits(tt.grants, "s", tt.limit)
		if len(over) != tt.want || most != tt.wantMost {
			t.Errorf("%s: over the limit %q, most %d; want %d over, most %d", tt.name, over, most, tt.want, tt.wantMost)
		}
	}
	over, _ := overLimits([]grant{permitWin(1, "s", 0, 10), permitWin(2, "s", 2, 12), permitWin(3, "s", 11, 20)}, "s", 1)
	if len(over) != 2 || len(over[1].Valid) != 1 || over[1].Valid[0].ID != 2 || over[1].Later.ID != 3 {
		t.Errorf("over the limit %q, want grant 2 inside 1, then 3 inside 2 alone", over)
	}
}

func TestUsedDuringOverlap(t *testing.T) {
	over := overlaps([]grant{win(1, "a", 0, 10), win(2, "a", 8, 20), win(3, "b", 0, 10), win(4, "b", 5, 20)})
	if len(over) != 2 {
		t.Fatalf("overlaps = %v, want 2", over)
	}
	rmws := []rmw{
		{Grant: 1, Start: ms(1), End: ms(9)}, // after grant 2 was granted at 8
		{Grant: 3, Start: ms(1), End: ms(4)}, // before grant 4 at 5
		{Grant: 4, Start: ms(6), End: ms(7)},
	}
	if got := usedDuringOverlap(over, rmws); got != 1 {
		t.Errorf("usedDuringOverlap = %d, want 1", got)
	}
}

func TestLateUses(t *testing.T) {
	grants := []grant{win(1, "a", 0, 10), win(2, "a", 20, 30)}
	rmws := []rmw{
		{Grant: 1, Start: ms(1), End: ms(9)},   // inside
		{Grant: 1, Start: ms(9), End: ms(11)},  // ends after the window
		{Grant: 2, Start: ms(19), End: ms(21)}, // starts before it
		{Grant: 3, Start: ms(1), End: ms(2)},   // no such grant
	}
	if got := lateUses(grants, rmws); got != 3 {
		t.Errorf("lateUses = %d, want 3", got)
	}
}

func TestLateRaces(t *testing.T) {
	grants := []grant{win(1, "a", 0, 10), win(2, "a", 10, 20), win(3, "b", 0, 10), win(4, "b", 10, 20), win(5, "c", 0, 10)}
	rmws := []rmw{
		{Grant: 1, Start: ms(9), End: ms(12)},  // ends after its window, in grant 2's
		{Grant: 2, Start: ms(11), End: ms(13)}, // races grant 1's late update
		{Grant: 2, Start: ms(14), End: ms(15)}, // races nothing
		{Grant: 3, Start: ms(1), End: ms(2)},   // b: in order, inside the windows
		{Grant: 4, Start: ms(11), End: ms(12)},
		{Grant: 5, Start: ms(1), End: ms(3)}, // c: two updates of one holder at once,
		{Grant: 5, Start: ms(2), End: ms(4)}, // both inside its window
	}
	races := lateRaces(grants, rmws)
	if len(races) != 1 || races["a"] != 1 {
		t.Errorf("lateRaces = %v, want map[a:1]", races)
	}
	lost := map[string]int64{"a": 2, "b": 1}
	if got := explainedLosses(lost, races); got != 1 {
		t.Errorf("explainedLosses(%v, %v) = %d, want 1: one race explains one of a's losses, none of b's", lost, races, got)
	}
}

func TestLostUpdates(t *testing.T) {
	got := lostUpdates(map[string]int64{"a": 10, "b": 7, "c": 3}, map[string]int64{"a": 10, "b": 5, "c": 3})
	if len(got) != 1 || got["b"] != 2 {
		t.Errorf("lostUpdates = %v, want map[b:2]", got)
	}
}

func TestFenceViolations(t *testing.T) {
	fenced := func(id int, from, to int, token uint64) grant {
		g := win(id, "a", from, to)
		g.Kind, g.Token = kindFenced, token
		return g
	}
	tests := []struct {
		name   string
		grants []grant
		writes []write
		want   int
	}{
		{
			"increasing tokens, stale write rejected",
			[]grant{fenced(1, 0, 10, 1), fenced(2, 20, 30, 2)},
			[]write{{1, "a", 1, true}, {2, "a", 2, true}, {1, "a", 1, false}},
			0,
		},
		{
			"late write accepted before the newer holder wrote",
			[]grant{fenced(1, 0, 10, 1), fenced(2, 20, 30, 2)},
			[]write{{1, "a", 1, true}, {2, "a", 2, true}},
			0,
		},
		{
			"older holder accepted after the newer one (tokens went back)",
			[]grant{fenced(1, 0, 10, 5), fenced(2, 20, 30, 3)},
			[]write{{2, "a", 3, true}, {1, "a", 5, true}},
			2, // P1 on the grants and the accepted order
		},
		{
			"duplicate token among overlapping Lock calls",
			[]grant{fenced(1, 0, 10, 4), fenced(2, 0, 30, 4)},
			nil,
			1,
		},
		{
			"write from a grant never recorded",
			[]grant{fenced(1, 0, 10, 1)},
			[]write{{9, "a", 1, true}},
			1,
		},
		{
			"unfenced grants are not checked",
			[]grant{win(1, "a", 0, 10), win(2, "a", 20, 30)},
			nil,
			0,
		},
	}
	for _, tt := range tests {
		if got := fenceViolations(tt.grants, tt.writes); len(got) != tt.want {
			t.Errorf("%s: violations %q, want %d", tt.name, got, tt.want)
		}
	}
}

func TestLeakedKeys(t *testing.T) {
	resources := []string{"r1", "r2"}
	tests := []struct {
		name string
		keys []storedKey
		want int
	}{
		{"nothing left", nil, 0},
		{"counters without TTL stay", []storedKey{{0, "{r1}:fencing-token", -1}, {3, "{r2}:fencing-token", -1}}, 0},
		{"lock key left", []storedKey{{2, "r1", 150}}, 1},
		{"lock key without TTL", []storedKey{{2, "r2", -1}}, 1},
		{"counter that expires", []storedKey{{1, "{r1}:fencing-token", 5000}}, 1},
		{"counter of an unknown resource", []storedKey{{1, "{other}:fencing-token", -1}}, 1},
		{"unknown key", []storedKey{{4, "stray", -1}}, 1},
		{"filler is skipped", []storedKey{{0, fillerPrefix + "7", -1}}, 0},
		{"semaphore slot left", []storedKey{{1, "{s1}:permit:0", 120}}, 1},
		{"semaphore limit record left", []storedKey{{3, "{s3}:limit", 80}, {4, "{s3}:limit", -1}}, 2},
		{"key of another semaphore", []storedKey{{0, "{s2}:permit:0", 100}}, 1},
	}
	semaphores := []string{"{s1}", "{s3}"}
	for _, tt := range tests {
		if got := leakedKeys(tt.keys, resources, semaphores, fillerPrefix); len(got) != tt.want {
			t.Errorf("%s: leaks %q, want %d", tt.name, got, tt.want)
		}
	}
	if got := leakedKeys([]storedKey{{0, fillerPrefix + "7", -1}}, resources, semaphores, ""); len(got) != 1 {
		t.Errorf("filler without an ignored prefix: leaks %q, want 1", got)
	}
}

func TestCounterResource(t *testing.T) {
	tests := map[string]string{
		"{r1}:fencing-token": "r1",
		"r1:fencing-token":   "",
		"{r1}":               "",
		"r1":                 "",
	}
	for key, want := range tests {
		if got := counterResource(key); got != want {
			t.Errorf("counterResource(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestFencedStore(t *testing.T) {
	var s fencedStore
	s.highest = map[string]uint64{}
	steps := []struct {
		token uint64
		want  bool
	}{{3, true}, {3, true}, {2, false}, {7, true}, {5, false}}
	for i, st := range steps {
		if got := s.offer("a", st.token, i); got != st.want {
			t.Errorf("step %d: offer(%d) = %v, want %v", i, st.token, got, st.want)
		}
	}
	if len(s.log) != len(steps) {
		t.Errorf("log has %d writes, want %d", len(s.log), len(steps))
	}
}

func TestCountersSequential(t *testing.T) {
	c := counters{values: map[string]*atomic.Int64{}, completed: map[string]int64{}}
	for range 5 {
		c.increment("a", 0)
	}
	c.increment("b", 0)
	completed, final := c.snapshot()
	if completed["a"] != 5 || final["a"] != 5 || completed["b"] != 1 || final["b"] != 1 {
		t.Errorf("completed %v, final %v, want a:5 and b:1 in both", completed, final)
	}
	if lost := lostUpdates(completed, final); len(lost) != 0 {
		t.Errorf("lostUpdates = %v after sequential increments", lost)
	}
}

// A failed Lock call counts as held when the refusals alone left no
// quorum, and as skipping a node when one of its node errors says so.
func TestRecorderClassifiesFailures(t *testing.T) {
	rec := newRecorder()
	skipped := &redlock.NodeError{Node: 4, Err: redlock.ErrNodeSkipped}
	for _, err := range []error{
		nil,
		&redlock.QuorumError{Nodes: 5, Quorum: 3, Granted: 2, Refused: 3},
		&redlock.QuorumError{Nodes: 5, Quorum: 3, Granted: 2, Refused: 2, Errors: []*redlock.NodeError{skipped}},
		&redlock.QuorumError{Nodes: 5, Quorum: 3, Granted: 1, Refused: 1, Errors: []*redlock.NodeError{{Node: 0, Err: errors.New("refused")}}},
		fmt.Errorf("do: %w", &redlock.QuorumError{Nodes: 3, Quorum: 2, Refused: 2}),
	} {
		rec.attempt(kindPlain, err, time.Millisecond)
	}
	if rec.attempted[kindPlain] != 5 || rec.granted[kindPlain] != 1 || rec.failed[kindPlain] != 4 {
		t.Errorf("attempted %d, granted %d, failed %d; want 5, 1, 4", rec.attempted[kindPlain], rec.granted[kindPlain], rec.failed[kindPlain])
	}
	if rec.failedHeld != 2 || rec.failedSkipped != 1 {
		t.Errorf("failures held %d, with a node skipped %d; want 2 and 1", rec.failedHeld, rec.failedSkipped)
	}
}
