package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/resp"
)

var (
	profileFlag = flag.String("chaos", "", "run the chaos suite with this profile: short or long")
	seedFlag    = flag.Uint64("chaos.seed", 1, "seed of the fault schedule and the workers' choices")
	outFlag     = flag.String("chaos.out", "", "path of the JSON report (default results/<profile>.json)")
)

// profile sizes a run.
type profile struct {
	work workload
	// The safe phase runs at least safeMin, then until it has minGrants
	// grants (minPermits of them permits) and minFaults injected faults,
	// and fails at safeMax.
	safeMin, safeMax                 time.Duration
	minGrants, minPermits, minFaults int
	minLeaderships                   int
	// Each negative control runs at least control, then until its
	// history shows a violation, and stops at controlMax: a slow host
	// needs longer to hit the window a control leaves open.
	control, controlMax time.Duration
}

var profiles = map[string]profile{
	// About three minutes in all, for CI.
	"short": {
		work: workload{
			Workers: 10, Resources: resources(6), Semaphores: semaphores(2, 4), Elections: 4,
			TTLs:        []time.Duration{250 * time.Millisecond, 400 * time.Millisecond},
			NodeTimeout: 50 * time.Millisecond, PauseShare: 0.05, AbandonShare: 0.02,
			Hold: 10 * time.Millisecond, Gap: 100 * time.Microsecond,
		},
		safeMin: 100 * time.Second, safeMax: 100 * time.Second,
		control: 25 * time.Second, controlMax: 100 * time.Second,
	},
	"long": {
		work: workload{
			Workers: 24, Resources: resources(16), Semaphores: semaphores(4, 8), Elections: 8,
			TTLs:        []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond},
			NodeTimeout: 50 * time.Millisecond, PauseShare: 0.05, AbandonShare: 0.02,
			Hold: 5 * time.Millisecond, Gap: 100 * time.Microsecond,
		},
		safeMin: 5 * time.Minute, safeMax: 75 * time.Minute,
		minGrants: 100_000, minPermits: 20_000, minFaults: 1000, minLeaderships: 2000,
		control: 90 * time.Second, controlMax: 6 * time.Minute,
	},
}

func resources(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("chaos:resource:%d", i)
	}
	return out
}

// semaphores are the two semaphores of a run, with limits 1 and 3, and
// their workers: one more than the limit keeps the limit reached most of
// the time, with a holder waiting.
func semaphores(workers1, workers3 int) []semaphoreSpec {
	return []semaphoreSpec{
		{Name: "{chaos:semaphore:1}", Limit: 1, Workers: workers1},
		{Name: "{chaos:semaphore:3}", Limit: 3, Workers: workers3},
	}
}

// phase is one configuration of the nodes with the faults injected into it.
type phase struct {
	name       string
	control    bool
	conditions string
	cfg        redisnode.Config
	faults     []string // drawn at random, one at a time
	filler     bool     // fill the nodes' memory with other keys
}

var phases = []phase{
	{
		name:       "safe",
		conditions: "5 nodes, appendonly yes + appendfsync always, maxmemory-policy noeviction, fixed node set; every fault within the operational requirements",
		cfg:        redisnode.Config{AppendOnly: true, AppendFsync: "always"},
		faults:     safeFaults,
	},
	{
		name:       "control-restart",
		control:    true,
		conditions: "negative control: no persistence, a majority of nodes killed and restarted one after another, again and again",
		cfg:        redisnode.Config{},
		faults:     []string{faultRestartMajority},
	},
	{
		name:       "control-eviction",
		control:    true,
		conditions: "negative control: maxmemory 4mb with allkeys-lru while other keys fill the nodes",
		cfg:        redisnode.Config{Directives: [][]string{{"maxmemory", "4mb"}, {"maxmemory-policy", "allkeys-lru"}}},
		filler:     true,
	},
}

const fillerPrefix = "filler:"

// TestChaos runs the safe phase and the negative controls of the profile
// given with -chaos, prints the report, writes it as JSON and fails if the
// safe phase shows any violation or a control shows none.
func TestChaos(t *testing.T) {
	if *profileFlag == "" {
		t.Skip("the chaos suite runs only when asked: -chaos=short or -chaos=long (make chaos, make chaos-long)")
	}
	prof, ok := profiles[*profileFlag]
	if !ok {
		t.Fatalf("-chaos=%q: want short or long", *profileFlag)
	}
	rep := report{Profile: *profileFlag, Seed: *seedFlag, Date: time.Now().UTC().Format(time.RFC3339)}
	for i, ph := range phases {
		t.Run(ph.name, func(t *testing.T) {
			rep.Phases = append(rep.Phases, runPhase(t, prof, ph, *seedFlag+uint64(i)))
		})
	}
	rep.print(os.Stdout)
	out := *outFlag
	if out == "" {
		out = filepath.Join("results", *profileFlag+".json")
	}
	if err := rep.write(out); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	for _, p := range rep.Phases {
		switch {
		case p.Control && p.violations() == 0:
			t.Errorf("%s: the negative control found no violation in %d grants and %d faults over %s: the checkers cannot be trusted",
				p.Name, p.Granted, p.FaultsTotal, p.Duration)
		case !p.Control && (p.violations() != 0 || p.Unexpected != 0):
			t.Errorf("%s: %d violations, %d unexpected errors under faults locksmith should survive", p.Name, p.violations(), p.Unexpected)
		case !p.Control && (p.Granted < prof.minGrants || p.GrantedBy[kindSemaphore] < prof.minPermits || p.GrantedBy[kindElection] < prof.minLeaderships || p.FaultsTotal < prof.minFaults):
			t.Errorf("%s: %d grants (%d permits, %d leaderships) and %d faults, want at least %d (%d, %d) and %d",
				p.Name, p.Granted, p.GrantedBy[kindSemaphore], p.GrantedBy[kindElection], p.FaultsTotal, prof.minGrants, prof.minPermits, prof.minLeaderships, prof.minFaults)
		}
		for _, s := range p.Semaphores {
			if !p.Control && s.ControlOverLimit == 0 {
				t.Errorf("%s: semaphore %s: checked against limit %d, its %d permits show no over-limit window: the checker cannot be trusted",
					p.Name, s.Name, s.Limit-1, s.Granted)
			}
		}
	}
}

// runPhase starts the nodes of one phase, runs the workers while faults
// are injected, lets every lock expire and checks the history.
func runPhase(t *testing.T, prof profile, ph phase, seed uint64) phaseReport {
	w := prof.work
	c := startCluster(t, 5, ph.cfg)
	cl := newClients(t, c, w)
	rec := newRecorder()
	inj := newInjector(t, c, seed, w.maxTTL())
	stopFiller := func() {}
	if ph.filler {
		stopFiller = fill(t, c)
		t.Cleanup(stopFiller)
	}
	obs := observe(t, cl, w)
	t.Cleanup(func() { obs.finish(0) })
	stopWorkers := w.run(cl, rec, seed)
	t.Cleanup(stopWorkers)

	start := time.Now()
	duration := prof.safeMin
	if ph.control {
		duration = prof.control
	}
	lastProgress := start
	done := func() bool {
		elapsed := time.Since(start)
		if ph.control {
			return elapsed >= duration && (elapsed >= prof.controlMax || rec.overlapping())
		}
		if elapsed >= prof.safeMax {
			return true
		}
		rec.mu.Lock()
		granted, permits, leaderships := 0, rec.granted[kindSemaphore], rec.granted[kindElection]
		for _, n := range rec.granted {
			granted += n
		}
		rec.mu.Unlock()
		if time.Since(lastProgress) >= time.Minute {
			lastProgress = time.Now()
			t.Logf("%s: %v, %d grants (%d permits), %d faults", ph.name, elapsed.Round(time.Second), granted, permits, inj.n)
		}
		return elapsed >= duration && granted >= prof.minGrants && permits >= prof.minPermits && leaderships >= prof.minLeaderships && inj.n >= prof.minFaults
	}
	if len(ph.faults) > 0 {
		inj.run(ph.faults, done)
	} else {
		for !done() {
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopWorkers()
	elapsed := time.Since(start)
	stopFiller()
	if ph.filler {
		inj.stats[faultEvictionPressure] = &faultStat{Count: 1, Total: elapsed}
	}
	// Locks not released (abandoned, or a release that did not reach
	// every node) must expire on their own: wait out the longest TTL.
	settle(w.longestTTL())
	// Every leadership has ended: each stream must say so, within a
	// bound generous beside its quarter-TTL polls.
	streams := obs.finish(10 * w.maxTTL())
	keys := c.storedKeys(t)
	ignore := ""
	if ph.filler {
		ignore = fillerPrefix
	}
	p := phaseReport{
		Name: ph.name, Control: ph.control, Conditions: ph.conditions,
		Workers: w.allWorkers(), Resources: len(w.Resources), TTLs: ttlNames(w.TTLs),
		Duration: elapsed.Round(time.Second).String(),
	}
	p = summarize(p, rec, inj, keys, w, ignore)
	p.Observe = checkStreams(streams)
	return p
}

// fill writes 16KiB values under filler keys to every node, directly, one
// a millisecond per node, until the returned function is called. That keeps
// the nodes evicting without taking the machine's CPU from the workers.
func fill(t *testing.T, c *cluster) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	value := strings.Repeat("x", 16<<10)
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; {
				conn, err := resp.DialWire(ctx, n.Addr(), nil)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				for ; ctx.Err() == nil; i++ {
					if _, err := conn.Do(ctx, "SET", fmt.Sprintf("%s%d", fillerPrefix, i%10000), value); err != nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				_ = conn.Close()
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}
