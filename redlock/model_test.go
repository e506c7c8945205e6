package redlock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

var (
	modelSchedules = flag.Int("lockmodel.schedules", 0, "schedules TestLockModel runs (default 2000, 400 with -short)")
	modelSeed      = flag.Uint64("lockmodel.seed", 0, "run only the TestLockModel schedule with this seed")
)

// TestLockModel is a model-based test of one Lock used by many goroutines
// at once. Each schedule acquires a lock, then three goroutines run random
// sequences of Extend (random TTLs), KeepAlive and its stop, Resume of the
// lock's value, Unlock on it and Close of the Client (with a ctx that may
// have ended already), while every request to the nodes may be
// delayed, dropped, applied with its reply lost, applied twice, or applied
// late (after requests sent later). A checker reads the nodes' real key
// expiry after every step and in a loop of its own, and asserts that
//
//   - ValidUntil is never later than the time by which a quorum of nodes
//     may have expired the key;
//   - the loss timer of a running KeepAlive is armed before ValidUntil, and
//     its context reports the loss (Err) once ValidUntil has passed;
//   - Unlock has cancelled every KeepAlive context by the time it returns,
//     no extend round starts after the release round, and Resume of the
//     lock's value returns the same Lock;
//   - after a confirmed Unlock, only nodes whose release failed still hold
//     the key;
//   - in the schedules whose lock is a semaphore's permit (one in four),
//     every node that holds the permit's slot keeps the semaphore's limit
//     record at least as long;
//   - once a Close has taken effect, Extend, Unlock and Resume return
//     ErrClosed (the model first calls Close with an ended ctx, which takes
//     effect and returns without waiting, so that it knows when); a
//     Close that returned nil has cancelled every KeepAlive context and
//     released the lock (ValidUntil is zero), and no extend or release
//     round starts after it returned. Every schedule ends with a Close.
//
// A schedule is random but not replayable to the interleaving: a failing
// seed is printed, and -lockmodel.seed runs it again with the same choices.
func TestLockModel(t *testing.T) {
	n := *modelSchedules
	if n == 0 {
		n = 2000
		if testing.Short() {
			n = 400
		}
	}
	nodes := make([]*clockedNode, 3)
	for i := range nodes {
		s := miniredis.RunT(t)
		rc := resp.Dial(s.Addr())
		t.Cleanup(func() { rc.Close() })
		nodes[i] = &clockedNode{server: s, conn: rc, last: time.Now()}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if *modelSeed != 0 {
		seeds = []uint64{*modelSeed}
	}

	var stats modelStats
	sem := make(chan struct{}, 16) // schedules at once: they mostly wait
	var wg sync.WaitGroup
	for _, seed := range seeds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s := newSchedule(t, nodes, seed, &stats)
			s.run()
			for _, v := range s.violations {
				t.Errorf("seed %d: %s (replay: go test ./redlock -run TestLockModel -lockmodel.seed=%d)", seed, v, seed)
			}
		})
	}
	wg.Wait()
	t.Logf("%d schedules (%d could not acquire their lock without faults and ran no steps; %d acquired it with a node skipped), %d Close calls mid-schedule, %d steps, %d checks, %d extend rounds, %d faults injected",
		len(seeds), stats.unacquired.Load(), stats.skipped.Load(), stats.closes.Load(), stats.steps.Load(), stats.checks.Load(), stats.rounds.Load(), stats.faults.Load())
	if stats.unacquired.Load() > int64(len(seeds))/2 {
		t.Errorf("%d of %d schedules could not acquire their lock: the model checked too little", stats.unacquired.Load(), len(seeds))
	}
}

// modelNodeTimeout is the per-node timeout of the model's Clients: long
// enough for a loaded machine to answer most requests in time, short
// enough that a hung request costs little.
const modelNodeTimeout = 60 * time.Millisecond

type modelStats struct {
	unacquired, steps, checks, rounds, faults, skipped, closes atomic.Int64
}

// clockedNode is an in-process node whose keys expire in real time: the
// server's clock is moved to now before every command reaches it and
// before every read of the checker.
type clockedNode struct {
	server *miniredis.Miniredis
	conn   *resp.Conn

	mu    sync.Mutex
	last  time.Time
	calls map[string]int // script calls by their first key
}

var _ driver.Conn = (*clockedNode)(nil)

// catchUp moves the server's clock to now. The caller holds n.mu.
func (n *clockedNode) catchUp() time.Time {
	now := time.Now()
	if d := now.Sub(n.last); d > 0 {
		n.server.FastForward(d)
		n.last = now
	}
	return n.last
}

func (n *clockedNode) sync() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.catchUp()
}

// count records a script call on keys.
func (n *clockedNode) count(keys []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.calls == nil {
		n.calls = make(map[string]int)
	}
	n.calls[keys[0]]++
}

// callsOn returns how many script calls on key reached the node.
func (n *clockedNode) callsOn(key string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[key]
}

func (n *clockedNode) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	n.sync()
	n.count(keys)
	return n.conn.Eval(ctx, script, keys, args)
}

func (n *clockedNode) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	n.sync()
	n.count(keys)
	return n.conn.EvalSha(ctx, sha1, keys, args)
}

func (n *clockedNode) ScriptLoad(ctx context.Context, script string) (string, error) {
	n.sync()
	return n.conn.ScriptLoad(ctx, script)
}

// expiry returns when key expires on the node if it holds value. When it
// does not, the key is gone since some time before now, and expiry returns
// now: the latest time it can have expired, so that a check never blames
// a lock for what cannot be known.
func (n *clockedNode) expiry(key, value string) (_ time.Time, held bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.catchUp()
	if got, err := n.server.Get(key); err != nil || got != value {
		return now, false
	}
	ttl := n.server.TTL(key)
	if ttl <= 0 {
		return now.Add(24 * time.Hour), true // no expiry at all
	}
	return now.Add(ttl), true
}

// recordAndSlot returns when a permit's slot, holding value, and its
// semaphore's limit record expire on the node; the record's expiry is now
// when it is gone. ok is false when the slot was not seen to hold value
// with a TTL: a release can run between the reads. The record is read
// after the slot, so that a script lengthening both between the reads
// makes no false alarm.
func (n *clockedNode) recordAndSlot(record, slot, value string) (slotEnd, recordEnd time.Time, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.catchUp()
	if got, err := n.server.Get(slot); err != nil || got != value {
		return time.Time{}, time.Time{}, false
	}
	ttl := n.server.TTL(slot)
	if ttl <= 0 {
		return time.Time{}, time.Time{}, false
	}
	recordEnd = now
	if n.server.Exists(record) {
		recordEnd = now.Add(n.server.TTL(record))
	}
	return now.Add(ttl), recordEnd, true
}

// schedule is one run of the model: one lock, three goroutines.
type schedule struct {
	seed   uint64
	nodes  []*clockedNode
	faults []*faults.Conn
	client *redlock.Client
	key    string
	// skipped is the node that the lock's acquire skipped, as one behind
	// the others, so that none of the lock's requests may reach it; -1
	// when none was.
	skipped int

	lock  *redlock.Lock
	value string
	// record is, in a schedule whose lock is a semaphore's permit, the
	// semaphore's limit record; "" in the others.
	record string

	faultMu  sync.Mutex
	faultRNG *rand.Rand
	faultsOn atomic.Bool

	mu           sync.Mutex
	violations   []string
	keepAlives   map[int]*keepAlive // by goroutine
	extendStarts []time.Time        // of every extend round
	releases     []observe.RoundInfo
	unlocked     bool      // an Unlock returned nil or ErrExpired
	closedAt     time.Time // when the first Close that returned nil did
	stats        *modelStats

	closeCalled   atomic.Bool // set before the first Close is called
	closeInEffect atomic.Bool // set once a Close has returned: c is closed
}

type keepAlive struct {
	ctx  context.Context
	stop func()
}

func newSchedule(t *testing.T, nodes []*clockedNode, seed uint64, stats *modelStats) *schedule {
	s := &schedule{
		seed:       seed,
		nodes:      nodes,
		key:        fmt.Sprintf("model:%d", seed),
		faultRNG:   rand.New(rand.NewPCG(seed, 1)),
		keepAlives: make(map[int]*keepAlive),
		stats:      stats,
		skipped:    -1,
	}
	opts := []redlock.Option{
		redlock.WithNodeTimeout(modelNodeTimeout),
		redlock.WithRetryStrategy(redlock.NoRetry()),
		redlock.WithReleaseNotifications(false),
	}
	// One schedule in four holds a permit of a semaphore; its acquire
	// goes to every node, so it skips none.
	permit := rand.New(rand.NewPCG(seed, 4)).IntN(4) == 0
	if permit {
		s.record = fmt.Sprintf("{model:%d}:limit", seed)
	}
	if pick := rand.New(rand.NewPCG(seed, 3)); pick.IntN(3) == 0 && !permit {
		s.skipped = pick.IntN(len(nodes))
		skip := make([]bool, len(nodes))
		skip[s.skipped] = true
		opts = append(opts, redlock.SkipNodes(skip))
	}
	conns := make([]driver.Conn, len(nodes))
	for i, n := range nodes {
		f := faults.Wrap(n)
		f.LateBy(time.Duration(s.faultRNG.IntN(60)+1) * time.Millisecond)
		f.Choose(s.chooseFault)
		s.faults = append(s.faults, f)
		conns[i] = f
	}
	record := func(_ context.Context, info observe.RoundInfo) {
		stats.rounds.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.extendStarts = append(s.extendStarts, info.Start)
	}
	client, err := redlock.New(conns, append(opts,
		redlock.WithObserver(observe.Observer{
			Extended:     record,
			ExtendFailed: record,
			Released: func(_ context.Context, info observe.RoundInfo) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.releases = append(s.releases, info)
			},
		}))...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.client = client
	return s
}

// chooseFault picks the fault of one request while faults are on.
func (s *schedule) chooseFault(string) faults.Fault {
	if !s.faultsOn.Load() {
		return faults.Fault{}
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	f := faults.Fault{}
	switch p := s.faultRNG.IntN(100); {
	case p < 60:
		f.Delay = time.Duration(s.faultRNG.IntN(3)) * time.Millisecond
	case p < 67:
		f.Mode = faults.Fail
	case p < 74:
		f.Mode = faults.LoseReply
	case p < 82:
		f.Mode = faults.Duplicate
	case p < 92:
		f.Mode = faults.ApplyLate
	case p < 94:
		f.Mode = faults.Hang
	default:
		f.Delay = time.Duration(s.faultRNG.IntN(80)) * time.Millisecond // often past the node timeout
	}
	if f != (faults.Fault{}) {
		s.stats.faults.Add(1)
	}
	return f
}

func (s *schedule) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

func (s *schedule) run() {
	stats := s.stats
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(s.seed, 2))
	ttl := time.Duration(150+rng.IntN(300)) * time.Millisecond
	acquire := func() (*redlock.Lock, error) { return s.client.Lock(ctx, s.key, ttl) }
	if s.record != "" {
		sem, err := s.client.Semaphore(s.key, 1+rand.New(rand.NewPCG(s.seed, 5)).IntN(3))
		if err != nil {
			s.violate("Semaphore: %v", err)
			return
		}
		acquire = func() (*redlock.Lock, error) { return sem.Acquire(ctx, ttl) }
	}
	for range 50 {
		l, err := acquire()
		if err == nil {
			s.lock, s.value, s.key = l, l.Value(), l.Key()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.lock == nil {
		stats.unacquired.Add(1)
		s.settle()
		return
	}

	// Faults start once every request of the acquisition has ended: an
	// acquire request applied after the lock's release is the one case
	// beyond any client's reach (its key lives out its TTL).
	s.settle()
	s.faultsOn.Store(true)
	done := make(chan struct{})
	var checker sync.WaitGroup
	checker.Go(func() {
		for {
			s.check("checker")
			select {
			case <-done:
				return
			case <-time.After(3 * time.Millisecond):
			}
		}
	})
	var workers sync.WaitGroup
	for g := range 3 {
		workers.Go(func() { s.worker(g, rand.New(rand.NewPCG(s.seed, uint64(10+g)))) })
	}
	workers.Wait()
	close(done)
	checker.Wait()

	// The end: no faults, every late request applied, everything stopped.
	s.faultsOn.Store(false)
	for _, ka := range s.keepAlives {
		ka.stop()
	}
	s.settle()
	s.check("end")
	s.mu.Lock()
	unlocked := s.unlocked
	s.mu.Unlock()
	if !unlocked {
		if err := s.lock.Unlock(ctx); err == nil || errors.Is(err, redlock.ErrExpired) {
			s.mu.Lock()
			s.unlocked = true
			s.mu.Unlock()
		}
	}
	s.closeClient(ctx, false)
	s.settle()
	s.checkReleased()
	if s.skipped >= 0 {
		s.stats.skipped.Add(1)
		if n := s.nodes[s.skipped].callsOn(s.key); n > 0 {
			s.violate("%d requests on the key reached node %d, which the lock's acquire skipped", n, s.skipped)
		}
	}
}

// settle waits until no request of the schedule's Client runs and every
// request held back to be applied late has been applied.
func (s *schedule) settle() {
	if err := settleCtx(context.Background(), s.client); err != nil {
		panic(err) // Background never ends
	}
	for _, f := range s.faults {
		f.Wait()
	}
}

// worker runs random operations on the shared lock.
func (s *schedule) worker(g int, rng *rand.Rand) {
	ctx := context.Background()
	for range 6 {
		s.stats.steps.Add(1)
		randomTTL := func() time.Duration { return time.Duration(100+rng.IntN(400)) * time.Millisecond }
		switch p := rng.IntN(100); {
		case p < 40:
			s.extend(ctx, randomTTL())
		case p < 55:
			s.mu.Lock()
			ka := s.keepAlives[g]
			delete(s.keepAlives, g)
			s.mu.Unlock()
			if ka != nil {
				ka.stop()
				break
			}
			kctx, stop := s.lock.KeepAlive(ctx)
			s.mu.Lock()
			s.keepAlives[g] = &keepAlive{kctx, stop}
			s.mu.Unlock()
		case p < 68:
			got, err := s.client.Resume(ctx, s.key, s.value, randomTTL())
			if err == nil && got != s.lock {
				s.violate("Resume of the live lock's value returned a second Lock")
				got.Unlock(ctx)
			}
		case p < 72:
			s.unlock(ctx)
		case p < 74:
			s.stats.closes.Add(1)
			s.closeClient(ctx, rng.IntN(2) == 0)
		default:
			time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
		}
		s.check(fmt.Sprintf("goroutine %d", g))
	}
}

func (s *schedule) extend(ctx context.Context, ttl time.Duration) {
	s.mu.Lock()
	unlocked := s.unlocked
	s.mu.Unlock()
	closed := s.closeInEffect.Load()
	err := s.lock.Extend(ctx, ttl)
	switch {
	case closed && !errors.Is(err, redlock.ErrClosed):
		s.violate("Extend after Close was called returned %v, want ErrClosed", err)
	case errors.Is(err, redlock.ErrClosed) && s.closeCalled.Load():
		// Close was called while the Extend waited for its turn.
	case !closed && unlocked && !errors.Is(err, redlock.ErrReleased):
		s.violate("Extend after a confirmed Unlock returned %v, want ErrReleased", err)
	}
}

func (s *schedule) unlock(ctx context.Context) {
	closed := s.closeInEffect.Load()
	err := s.lock.Unlock(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || errors.Is(err, redlock.ErrExpired) {
		s.unlocked = true
	}
	if closed || errors.Is(err, redlock.ErrClosed) {
		if !errors.Is(err, redlock.ErrClosed) {
			s.violations = append(s.violations, fmt.Sprintf("Unlock after Close was called returned %v, want ErrClosed", err))
		}
		return // the KeepAlive contexts end with Close
	}
	for g, ka := range s.keepAlives {
		select {
		case <-ka.ctx.Done():
		default:
			s.violations = append(s.violations, fmt.Sprintf("KeepAlive context of goroutine %d still open after Unlock returned", g))
		}
	}
}

// closeClient closes the schedule's Client, with a ctx that has ended
// already when cancelled is set, and checks what a Close that returned nil
// promises.
func (s *schedule) closeClient(ctx context.Context, cancelled bool) {
	// Close marks the Client closed before it waits for anything; with an
	// ended ctx it returns right after, so that from then on every call
	// must return ErrClosed. Setting the flag before a Close that waits
	// would let another goroutine's Extend start before Close took effect.
	s.closeCalled.Store(true)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	err := s.client.Close(ended)
	s.closeInEffect.Store(true)
	if !cancelled {
		err = s.client.Close(ctx)
	}
	now := time.Now()
	switch {
	case cancelled && errors.Is(err, context.Canceled):
		return
	case err != nil:
		s.violate("Close = %v, want nil", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedAt.IsZero() {
		s.closedAt = now
	}
	for g, ka := range s.keepAlives {
		if ka.ctx.Err() == nil {
			s.violations = append(s.violations, fmt.Sprintf("KeepAlive context of goroutine %d still open after Close returned", g))
		}
	}
	if until := s.lock.ValidUntil(); !until.IsZero() {
		s.violations = append(s.violations, fmt.Sprintf("ValidUntil %v from now after Close returned, want zero", time.Until(until)))
	}
	if _, err := s.client.Resume(context.Background(), s.key, s.value, time.Second); !errors.Is(err, redlock.ErrClosed) {
		s.violations = append(s.violations, fmt.Sprintf("Resume after Close = %v, want ErrClosed", err))
	}
}

// check compares what the lock reports with what the nodes hold.
func (s *schedule) check(where string) {
	s.stats.checks.Add(1)
	for range 20 {
		before := s.lock.ValidUntil()
		type armed struct {
			ctx      context.Context
			deadline time.Time
			ok       bool
			err      error
		}
		s.mu.Lock()
		var timers []armed
		for _, ka := range s.keepAlives {
			d, ok := redlock.ArmedLossDeadline(ka.ctx)
			timers = append(timers, armed{ctx: ka.ctx, deadline: d, ok: ok})
		}
		s.mu.Unlock()
		expiries := make([]time.Time, len(s.nodes))
		for i, n := range s.nodes {
			var held bool
			expiries[i], held = n.expiry(s.key, s.value)
			if held && i == s.skipped {
				s.violate("%s: node %d holds the key although the lock's acquire skipped it", where, i)
			}
			if s.record != "" {
				if slot, record, ok := n.recordAndSlot(s.record, s.key, s.value); ok && record.Before(slot) {
					s.violate("%s: node %d's limit record expires %v before the permit's slot", where, i, slot.Sub(record))
				}
			}
		}
		now := time.Now()
		for i := range timers {
			timers[i].err = timers[i].ctx.Err()
		}
		if after := s.lock.ValidUntil(); !after.Equal(before) {
			continue // a round moved the validity meanwhile: read again
		}
		if before.IsZero() {
			return // unlocked
		}
		slices.SortFunc(expiries, func(a, b time.Time) int { return a.Compare(b) })
		quorumGone := expiries[quorum.Size(len(expiries))-1]
		if before.After(quorumGone) {
			s.violate("%s: ValidUntil is %v after a quorum of nodes may have expired the key (expiries from now: %v)",
				where, before.Sub(quorumGone), sinceNow(now, expiries))
		}
		for _, tm := range timers {
			if tm.ok && tm.err == nil && !tm.deadline.Before(before) {
				s.violate("%s: KeepAlive's loss timer is armed %v after ValidUntil", where, tm.deadline.Sub(before))
			}
			if !now.Before(before) && tm.err == nil {
				s.violate("%s: KeepAlive context's Err is nil %v after ValidUntil", where, now.Sub(before))
			}
		}
		return
	}
}

// checkReleased checks the end of a schedule whose lock was unlocked.
func (s *schedule) checkReleased() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closedAt.IsZero() {
		for _, start := range s.extendStarts {
			if start.After(s.closedAt) {
				s.violations = append(s.violations, fmt.Sprintf("an extend round started %v after Close returned", start.Sub(s.closedAt)))
			}
		}
		for _, r := range s.releases {
			if r.Start.After(s.closedAt) {
				s.violations = append(s.violations, fmt.Sprintf("a release round started %v after Close returned", r.Start.Sub(s.closedAt)))
			}
		}
	}
	if (!s.unlocked && s.closedAt.IsZero()) || len(s.releases) == 0 {
		return
	}
	first := s.releases[0].Start
	for _, start := range s.extendStarts {
		if start.After(first) {
			s.violations = append(s.violations, fmt.Sprintf("an extend round started %v after the first release round", start.Sub(first)))
		}
	}
	last := s.releases[len(s.releases)-1]
	holders := 0
	for _, n := range s.nodes {
		if _, held := n.expiry(s.key, s.value); held {
			holders++
		}
	}
	// A node that had not answered when the release was decided may
	// have failed it since.
	unconfirmed := last.Nodes - last.Granted - last.Refused
	if holders > unconfirmed {
		s.violations = append(s.violations, fmt.Sprintf("%d nodes hold the key after a confirmed Unlock whose release failed or was not answered on %d", holders, unconfirmed))
	}
}

func sinceNow(now time.Time, ts []time.Time) []time.Duration {
	ds := make([]time.Duration, len(ts))
	for i, t := range ts {
		ds[i] = t.Sub(now).Round(time.Millisecond)
	}
	return ds
}
