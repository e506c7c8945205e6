package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The faults the injector knows, as named in the report.
const (
	faultKillDelayed      = "kill -9, restart after max TTL"
	faultKillRestart      = "kill -9, immediate restart (appendfsync always)"
	faultPause            = "SIGSTOP/SIGCONT minority"
	faultLatency          = "latency + jitter"
	faultBlackholeMinor   = "blackhole minority"
	faultBlackholeMajor   = "blackhole majority"
	faultResetMinor       = "reset_peer minority"
	faultResetMajor       = "reset_peer majority"
	faultScriptFlush      = "SCRIPT FLUSH"
	faultAppliedTwice     = "request applied twice"
	faultReplyLost        = "request applied, reply lost"
	faultRestartMajority  = "kill -9 majority, immediate restart, no persistence"
	faultEvictionPressure = "filler writes under allkeys-lru"
	faultClientPause      = "client pause before use"
)

// safeFaults are the faults within locksmith's operational requirements.
var safeFaults = []string{
	faultKillDelayed, faultKillRestart, faultPause, faultLatency,
	faultBlackholeMinor, faultBlackholeMajor, faultResetMinor, faultResetMajor,
	faultScriptFlush, faultAppliedTwice, faultReplyLost,
}

// faultStat is how often a fault was injected and for how long in total.
type faultStat struct {
	Count int           `json:"count"`
	Total time.Duration `json:"total_ns"`
}

// injector applies faults one at a time, each drawn from its seeded
// random source, and undoes each before the next. It runs on the test's
// goroutine, which the node lifecycle calls require.
type injector struct {
	t      *testing.T
	c      *cluster
	rng    *rand.Rand
	maxTTL time.Duration
	stats  map[string]*faultStat
	n      int // faults injected
}

func newInjector(t *testing.T, c *cluster, seed uint64, maxTTL time.Duration) *injector {
	return &injector{t: t, c: c, rng: rand.New(rand.NewPCG(seed, 0)), maxTTL: maxTTL, stats: map[string]*faultStat{}}
}

// run injects faults drawn from kinds, with pauses of 50 to 250ms between
// them, until done reports true.
func (in *injector) run(kinds []string, done func() bool) {
	for !done() {
		in.inject(kinds[in.rng.IntN(len(kinds))])
		time.Sleep(in.between(50*time.Millisecond, 250*time.Millisecond))
	}
}

func (in *injector) inject(kind string) {
	t := in.t
	start := time.Now()
	hold := in.between(100*time.Millisecond, time.Second)
	switch kind {
	case faultKillDelayed:
		n := in.c.nodes[in.rng.IntN(len(in.c.nodes))]
		n.Kill(t)
		time.Sleep(in.maxTTL + in.between(0, in.maxTTL))
		n.Restart(t)
	case faultKillRestart:
		n := in.c.nodes[in.rng.IntN(len(in.c.nodes))]
		n.Kill(t)
		n.Restart(t)
	case faultRestartMajority:
		// One after another: a quorum stays up most of the time, so
		// locks are granted on nodes that lose them next. Killing all
		// first leaves no quorum while they start, and on a host slow
		// to start a server no window outlives that outage.
		for _, i := range in.pick(len(in.c.nodes)/2 + 1) {
			in.c.nodes[i].Kill(t)
			in.c.nodes[i].Restart(t)
		}
	case faultPause:
		picked := in.pick(in.minority())
		for _, i := range picked {
			in.c.nodes[i].Pause(t)
		}
		time.Sleep(hold)
		for _, i := range picked {
			in.c.nodes[i].Resume(t)
		}
	case faultLatency:
		// Replies delayed by latency ± jitter, at most the longest TTL.
		latency := in.between(in.maxTTL/10, in.maxTTL/2)
		jitter := in.between(0, in.maxTTL-latency)
		attrs := fmt.Sprintf(`{"latency":%d,"jitter":%d}`, latency.Milliseconds(), jitter.Milliseconds())
		in.withToxic(in.pick(1+in.rng.IntN(3)), "latency", "downstream", attrs, hold)
	case faultBlackholeMinor, faultBlackholeMajor:
		// timeout 0: requests are swallowed and the connection stays open.
		in.withToxic(in.pick(in.size(kind == faultBlackholeMajor)), "timeout", "upstream", `{"timeout":0}`, hold)
	case faultResetMinor, faultResetMajor:
		in.withToxic(in.pick(in.size(kind == faultResetMajor)), "reset_peer", "upstream", `{"timeout":0}`, hold)
	case faultScriptFlush:
		for i, n := range in.c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := n.DoContext(ctx, "SCRIPT", "FLUSH")
			cancel()
			if err != nil {
				t.Fatalf("node %d: SCRIPT FLUSH: %v", i, err)
			}
		}
	case faultAppliedTwice, faultReplyLost:
		// What a client that re-sends a command, or a connection that
		// breaks before the reply, does to every call to one to three
		// nodes.
		f := appliedTwice
		if kind == faultReplyLost {
			f = replyLost
		}
		picked := in.pick(1 + in.rng.IntN(3))
		for _, i := range picked {
			in.c.replies[i].set(f)
		}
		time.Sleep(hold)
		for _, i := range picked {
			in.c.replies[i].set(repliesIntact)
		}
	default:
		t.Fatalf("unknown fault %q", kind)
	}
	in.record(kind, time.Since(start))
}

// withToxic keeps a toxic on the proxies of the picked nodes for hold.
func (in *injector) withToxic(picked []int, typ, stream, attrs string, hold time.Duration) {
	for _, i := range picked {
		if err := in.c.addToxic(i, "chaos", typ, stream, attrs); err != nil {
			in.t.Fatal(err)
		}
	}
	time.Sleep(hold)
	for _, i := range picked {
		if typ == "timeout" {
			// Requests swallowed on a connection that stays open would
			// shift every later reply on it to the wrong request, which
			// no TCP network does: a partition that long ends in broken
			// connections. Close them all before traffic flows again.
			in.c.dropConnections(i)
		}
		in.c.clearToxics(i)
	}
	for _, i := range picked {
		if typ == "timeout" {
			if err := in.c.reopen(i); err != nil {
				in.t.Fatal(err)
			}
		}
	}
}

func (in *injector) record(kind string, d time.Duration) {
	s, ok := in.stats[kind]
	if !ok {
		s = &faultStat{}
		in.stats[kind] = s
	}
	s.Count++
	s.Total += d
	in.n++
}

// minority returns a random minority size: 1 or 2 of 5.
func (in *injector) minority() int { return 1 + in.rng.IntN((len(in.c.nodes)-1)/2) }

func (in *injector) size(majority bool) int {
	if majority {
		return len(in.c.nodes)/2 + 1
	}
	return in.minority()
}

// pick returns k distinct random node indexes.
func (in *injector) pick(k int) []int {
	return in.rng.Perm(len(in.c.nodes))[:k]
}

// between returns a random duration in [lo, hi).
func (in *injector) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(in.rng.Int64N(int64(hi-lo)))
}
