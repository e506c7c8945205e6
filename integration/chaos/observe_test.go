package chaos

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// observers follow the election through Election.Observe, one stream on
// each adapter's Client, while the workers run, and keep every state
// delivered.
type observers struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	streams [][]redlock.Leader
}

// observe starts a stream on each Client of c, or none without election
// workers.
func observe(t *testing.T, c clients, w workload) *observers {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := &observers{cancel: cancel, streams: make([][]redlock.Leader, len(c.plain))}
	if w.Elections == 0 {
		return o
	}
	for a := range c.plain {
		ch, err := c.elections[a][w.TTLs[0]].Observe(ctx)
		if err != nil {
			cancel()
			t.Fatalf("%s: Observe: %v", c.names[a], err)
		}
		o.wg.Go(func() {
			for l := range ch {
				o.mu.Lock()
				o.streams[a] = append(o.streams[a], l)
				o.mu.Unlock()
			}
		})
	}
	return o
}

// idle reports whether every stream's latest state is "no leader".
func (o *observers) idle() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.streams {
		if len(s) == 0 || s[len(s)-1].Term != 0 {
			return false
		}
	}
	return true
}

// finish is called once every leadership has ended: it gives the streams
// up to within a bound to deliver "no leader" (they read again at least
// every quarter of the TTL), ends them, and returns what they delivered.
func (o *observers) finish(bound time.Duration) [][]redlock.Leader {
	for deadline := time.Now().Add(bound); !o.idle() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	o.cancel()
	o.wg.Wait()
	return o.streams
}

// observeReport holds the checks of the Observe streams of a phase.
type observeReport struct {
	Streams int `json:"streams"`
	States  int `json:"states_delivered"`
	// NotIdle counts the streams whose last state was a leader, after
	// every leadership had ended: violations.
	NotIdle int `json:"streams_not_ending_on_no_leader"`
	// TermRegressions counts the states naming a leader of an older term
	// than one the same stream delivered before.
	TermRegressions int `json:"term_regressions"`
}

func checkStreams(streams [][]redlock.Leader) observeReport {
	r := observeReport{Streams: len(streams)}
	for _, s := range streams {
		r.States += len(s)
		var highest uint64
		for _, l := range s {
			if l.Term != 0 && l.Term < highest {
				r.TermRegressions++
			}
			highest = max(highest, l.Term)
		}
		if len(s) == 0 || s[len(s)-1].Term != 0 {
			r.NotIdle++
		}
	}
	return r
}

func TestCheckStreams(t *testing.T) {
	streams := [][]redlock.Leader{
		{{}, {Term: 3}, {}, {Term: 5}, {}},    // ends on no leader
		{{Term: 3}, {Term: 5}, {Term: 4}, {}}, // term 4 after 5
		{{}, {Term: 7}},                       // ends on a leader
		{},                                    // delivered nothing
	}
	got := checkStreams(streams)
	want := observeReport{Streams: 4, States: 11, NotIdle: 2, TermRegressions: 1}
	if got != want {
		t.Errorf("checkStreams = %+v, want %+v", got, want)
	}
}
