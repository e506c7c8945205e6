package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/redlock"
)

// The five ways a worker holds a lock, and the way a semaphore worker
// holds a permit.
const (
	kindPlain     = "plain"     // Lock, use, Unlock
	kindFenced    = "fenced"    // the same with a fencing token and writes to the fenced store
	kindDo        = "do"        // Client.Do with automatic renewal
	kindKeepAlive = "keepalive" // a fenced Lock kept by Lock.KeepAlive
	kindShared    = "shared"    // one Lock used by several goroutines: KeepAlive, Extend, Unlock (see worker.shared)
	kindSemaphore = "semaphore" // a permit kept by Lock.KeepAlive or held through Semaphore.Do, at random
	kindElection  = "election"  // a leadership of electionName held through Election.Do, resigned or let go
)

// electionName is the election of the election workers, a resource of its
// own: its leaderships are checked as locks on it, with their terms as
// tokens.
const electionName = "chaos:election"

var kinds = []string{kindPlain, kindFenced, kindDo, kindKeepAlive, kindShared}

// workload says how the workers use their locks and permits.
type workload struct {
	// Workers is the number of lock workers; each semaphore has workers
	// of its own.
	Workers    int
	Resources  []string
	Semaphores []semaphoreSpec
	// Elections is the number of election workers: candidates of
	// electionName, a leadership's term written to the fenced store.
	Elections int
	TTLs      []time.Duration
	// NodeTimeout is the per-node timeout of every client.
	NodeTimeout time.Duration
	// PauseShare is the share of grants whose holder pauses between
	// acquiring and using the lock, for up to 1.5 TTL.
	PauseShare float64
	// AbandonShare is the share of grants left to expire.
	AbandonShare float64
	// Hold bounds the pause between two updates of a holder; renewing
	// holders keep their lock for 0.5 to 1.5 TTL, so most are extended
	// once or twice.
	Hold time.Duration
	// Gap is the pause inside a counter's read-modify-write.
	Gap time.Duration
}

// semaphoreSpec is a semaphore of the run and its workers, each holding
// at most one permit at a time.
type semaphoreSpec struct {
	Name    string // with a hash tag, so that every key of it starts with Name
	Limit   int
	Workers int
}

func (w workload) maxTTL() time.Duration { return maxOf(w.TTLs) }

// allWorkers counts the lock and semaphore workers.
func (w workload) allWorkers() int {
	n := w.Workers + w.Elections
	for _, s := range w.Semaphores {
		n += s.Workers
	}
	return n
}

// checkedResources are the resources whose grants the checkers check: the
// lock workers' and, with election workers, the election.
func (w workload) checkedResources() []string {
	if w.Elections == 0 {
		return w.Resources
	}
	return append(w.Resources[:len(w.Resources):len(w.Resources)], electionName)
}

// longestTTL is the longest TTL a key of the run may get: shared locks are
// extended beyond the TTL they were taken for.
func (w workload) longestTTL() time.Duration { return maxExtendTTL(w.maxTTL()) }

// clients are one plain and one fenced redlock.Client per adapter, each
// reaching the nodes through the proxies and the nodes' reply faults, the
// workload's semaphores on each plain Client, by name, and its election
// on each plain Client, by TTL.
type clients struct {
	plain, fenced []*redlock.Client
	semaphores    []map[string]*redlock.Semaphore
	elections     []map[time.Duration]*redlock.Election
	names         []string
}

func newClients(t *testing.T, cl *cluster, w workload) clients {
	t.Helper()
	retries := int(2*w.maxTTL()/(15*time.Millisecond)) + 1
	opts := []redlock.Option{
		redlock.WithNodeTimeout(w.NodeTimeout),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(5*time.Millisecond, 20*time.Millisecond, retries)),
		// Waiters are woken by release notifications, so that hand-offs
		// race with expiry and faults as closely as they can.
		redlock.WithReleaseNotifications(true),
	}
	var c clients
	for _, a := range adapters.All() {
		addrs := cl.addrs()
		conns := make([]driver.Conn, len(addrs))
		for i, addr := range addrs {
			conns[i] = withReplyFaults(t, a.Conn(t, addr), cl.replies[i])
		}
		plain, err := redlock.New(conns, opts...)
		if err != nil {
			t.Fatalf("%s: redlock.New: %v", a.Name, err)
		}
		fenced, err := redlock.New(conns, append(opts, redlock.WithFencing())...)
		if err != nil {
			t.Fatalf("%s: redlock.New with fencing: %v", a.Name, err)
		}
		sems := map[string]*redlock.Semaphore{}
		for _, spec := range w.Semaphores {
			if sems[spec.Name], err = plain.Semaphore(spec.Name, spec.Limit); err != nil {
				t.Fatalf("%s: Semaphore: %v", a.Name, err)
			}
		}
		elections := map[time.Duration]*redlock.Election{}
		for _, ttl := range w.TTLs {
			if elections[ttl], err = plain.Election(electionName, ttl); err != nil {
				t.Fatalf("%s: Election: %v", a.Name, err)
			}
		}
		c.plain, c.fenced, c.names = append(c.plain, plain), append(c.fenced, fenced), append(c.names, a.Name)
		c.semaphores, c.elections = append(c.semaphores, sems), append(c.elections, elections)
	}
	return c
}

// run starts the workers and returns a function that stops them and waits
// for them to return.
func (w workload) run(c clients, rec *recorder, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := func(i int, kind string, sem string) {
		wk := worker{
			w:    w,
			rec:  rec,
			kind: kind,
			rng:  rand.New(rand.NewPCG(seed, uint64(i)+1)),
		}
		// Worker i runs over adapter i mod 4; lock worker i runs kind
		// i mod 5: the counts share no factor, so each adapter runs
		// several kinds.
		a := i % len(c.plain)
		wk.plain, wk.fenced, wk.adapter = c.plain[a], c.fenced[a], c.names[a]
		wk.sem = c.semaphores[a][sem]
		if kind == kindElection {
			wk.elections = c.elections[a]
		}
		wg.Go(func() { wk.loop(ctx) })
	}
	for i := range w.Workers {
		start(i, kinds[i%len(kinds)], "")
	}
	i := w.Workers
	for _, spec := range w.Semaphores {
		for range spec.Workers {
			start(i, kindSemaphore, spec.Name)
			i++
		}
	}
	for range w.Elections {
		start(i, kindElection, "")
		i++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

type worker struct {
	w             workload
	rec           *recorder
	kind          string
	adapter       string
	rng           *rand.Rand
	plain, fenced *redlock.Client
	sem           *redlock.Semaphore // of a semaphore worker, else nil
	// elections holds an election worker's Election by TTL, else nil.
	elections map[time.Duration]*redlock.Election
}

func (wk *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		resource := wk.w.Resources[wk.rng.IntN(len(wk.w.Resources))]
		ttl := wk.w.TTLs[wk.rng.IntN(len(wk.w.TTLs))]
		switch wk.kind {
		case kindPlain:
			wk.lockUseUnlock(ctx, wk.plain, resource, ttl)
		case kindFenced:
			wk.lockUseUnlock(ctx, wk.fenced, resource, ttl)
		case kindDo:
			wk.do(ctx, resource, ttl)
		case kindKeepAlive:
			wk.keepAlive(ctx, resource, ttl)
		case kindShared:
			wk.shared(ctx, resource, ttl)
		case kindSemaphore: // the permit's slot becomes the grant's resource
			if wk.rng.IntN(2) == 0 {
				wk.keepAlive(ctx, wk.sem.Name(), ttl)
			} else {
				wk.do(ctx, wk.sem.Name(), ttl)
			}
		case kindElection:
			wk.lead(ctx, ttl)
		}
	}
}

// lead campaigns through Election.Do and, once leading, uses the election
// as a fenced resource with the leadership's term as the token, while the
// leadership's context lasts, for 0.5 to 1.5 TTL; then it resigns, or
// returns from Do to let it resign, at random. Its window ends as a Do
// holder's does.
func (wk *worker) lead(ctx context.Context, ttl time.Duration) {
	start := wk.rec.now()
	called := false
	err := wk.elections[ttl].Do(ctx, wk.adapter, func(lctx context.Context, l *redlock.Leadership) error {
		called = true
		g := grant{ID: wk.rec.newID(), Resource: electionName, Kind: wk.kind, Adapter: wk.adapter, Start: start, Acquired: wk.rec.now(), Token: l.Term()}
		wk.rec.attempt(wk.kind, nil, g.Acquired-g.Start)
		lock, ok := redlock.LockFromContext(lctx)
		if !ok {
			wk.rec.unexpected("lead: LockFromContext found no lock in the leadership's context")
			return nil
		}
		g.End = wk.holdRenewed(lctx, lock, g, ttl, func() bool { return lctx.Err() == nil })
		wk.rec.addGrant(g)
		if wk.rng.IntN(2) == 0 {
			_ = l.Resign(ctx) // unconfirmed: Do resigns again
		}
		return nil
	})
	if !called {
		wk.check(err)
		if ctx.Err() == nil {
			wk.rec.attempt(wk.kind, err, wk.rec.now()-start)
		}
	}
}

// lock calls Lock, or the Acquire of a semaphore worker's semaphore, and
// records the attempt; it returns nil when nothing was granted.
func (wk *worker) lock(ctx context.Context, c *redlock.Client, resource string, ttl time.Duration) (*redlock.Lock, grant) {
	g := grant{ID: wk.rec.newID(), Resource: resource, Kind: wk.kind, Adapter: wk.adapter, Start: wk.rec.now()}
	var l *redlock.Lock
	var err error
	if wk.sem != nil {
		l, err = wk.sem.Acquire(ctx, ttl)
	} else {
		l, err = c.Lock(ctx, resource, ttl)
	}
	g.Acquired = wk.rec.now()
	if err != nil {
		wk.check(err)
		if ctx.Err() == nil { // a call cut short by the end of the run is no attempt
			wk.rec.attempt(wk.kind, err, g.Acquired-g.Start)
		}
		return nil, g
	}
	wk.rec.attempt(wk.kind, nil, g.Acquired-g.Start)
	g.Token = l.Token()
	g.Resource, g.Semaphore = l.Key(), wk.sem.Name()
	return l, g
}

// lockUseUnlock holds a lock without renewal: after an optional pause it
// updates the resource while ValidUntil, less a margin for the update
// itself, has not passed, then releases the lock or leaves it to expire.
func (wk *worker) lockUseUnlock(ctx context.Context, c *redlock.Client, resource string, ttl time.Duration) {
	l, g := wk.lock(ctx, c, resource, ttl)
	if l == nil {
		return
	}
	validUntil := wk.rec.at(l.ValidUntil())
	wk.maybePause(ttl)
	for range 1 + wk.rng.IntN(3) {
		if !wk.use(g, func() bool { return wk.rec.now() < validUntil-useMargin(ttl) }) {
			break
		}
		time.Sleep(wk.randDur(wk.w.Hold))
	}
	g.End = validUntil
	if wk.rng.Float64() < wk.w.AbandonShare {
		wk.rec.abandon()
	} else {
		g.End = min(g.End, wk.rec.now())
		_ = l.Unlock(ctx) // an unconfirmed release expires with the TTL
	}
	wk.rec.addGrant(g)
}

// do holds a lock through Client.Do, or a permit through Semaphore.Do
// for a semaphore worker; its window ends when fn returns, the context Do
// hands out is cancelled or the validity ends, whichever comes first. The
// holder trusts the context alone: Do promises that ctx.Err() reports a
// lock that can no longer be guaranteed.
func (wk *worker) do(ctx context.Context, resource string, ttl time.Duration) {
	start := wk.rec.now()
	called := false
	fn := func(lctx context.Context) error {
		called = true
		g := grant{ID: wk.rec.newID(), Kind: wk.kind, Adapter: wk.adapter, Start: start, Acquired: wk.rec.now()}
		wk.rec.attempt(wk.kind, nil, g.Acquired-g.Start)
		l, ok := redlock.LockFromContext(lctx)
		if !ok {
			wk.rec.unexpected("do: LockFromContext found no lock in the context Do passed")
			return nil
		}
		g.Resource, g.Semaphore = l.Key(), wk.sem.Name()
		g.End = wk.holdRenewed(lctx, l, g, ttl, func() bool { return lctx.Err() == nil })
		wk.rec.addGrant(g)
		return nil
	}
	var err error
	if wk.sem != nil {
		err = wk.sem.Do(ctx, ttl, fn)
	} else {
		err = wk.plain.Do(ctx, resource, ttl, fn)
	}
	if !called {
		wk.check(err)
		if ctx.Err() == nil {
			wk.rec.attempt(wk.kind, err, wk.rec.now()-start)
		}
	}
}

// keepAlive holds a fenced lock renewed by Lock.KeepAlive, or a semaphore
// worker's permit.
func (wk *worker) keepAlive(ctx context.Context, resource string, ttl time.Duration) {
	l, g := wk.lock(ctx, wk.fenced, resource, ttl)
	if l == nil {
		return
	}
	kctx, stop := l.KeepAlive(ctx)
	g.End = wk.holdRenewed(kctx, l, g, ttl, func() bool {
		return kctx.Err() == nil && wk.rec.now() < wk.rec.at(l.ValidUntil())-useMargin(ttl)
	})
	stop()
	g.End = min(g.End, wk.rec.now())
	_ = l.Unlock(ctx)
	wk.rec.addGrant(g)
}

// holdRenewed uses the renewed lock l for 0.5 to 1.5 TTL, while valid
// reports true, and returns the end of its window: the earliest of now,
// the end of l's validity and the moment lctx was seen cancelled. A
// cancellation for a lost lock seen after the validity ended is recorded:
// the goroutines that close lctx.Done() ran late.
func (wk *worker) holdRenewed(lctx context.Context, l *redlock.Lock, g grant, ttl time.Duration, valid func() bool) time.Duration {
	cancelled := make(chan time.Duration, 1)
	stopWatch := context.AfterFunc(lctx, func() { cancelled <- wk.rec.now() })
	until := g.Acquired + ttl/2 + wk.randDur(ttl)
	for wk.rec.now() < until {
		wk.maybePause(ttl)
		if !wk.use(g, valid) {
			break
		}
		time.Sleep(wk.randDur(wk.w.Hold))
	}
	validUntil := wk.rec.at(l.ValidUntil())
	end := min(wk.rec.now(), validUntil)
	if !stopWatch() {
		at := <-cancelled
		if errors.Is(context.Cause(lctx), redlock.ErrLockLost) && at > validUntil {
			wk.rec.lateCancel(wk.kind, at-validUntil)
		}
		end = min(end, at)
	}
	return end
}

// use updates the resource once if valid reports true: the counter, and
// the fenced store for a fenced lock. A permit's resource is its slot,
// which has at most one holder, so its counter loses no update either. A fenced holder whose validity has
// passed still offers its write, as a holder that does not know it was
// paused would: the store must refuse it if a newer holder wrote.
func (wk *worker) use(g grant, valid func() bool) bool {
	start := wk.rec.now()
	if !valid() {
		wk.rec.skip()
		if g.Token != 0 {
			wk.rec.store.offer(g.Resource, g.Token, g.ID)
		}
		return false
	}
	wk.rec.counters.increment(g.Resource, wk.w.Gap)
	wk.rec.addRMW(rmw{Grant: g.ID, Start: start, End: wk.rec.now()})
	if g.Token != 0 {
		wk.rec.store.offer(g.Resource, g.Token, g.ID)
	}
	return true
}

// maybePause pauses the holder, with probability PauseShare, for up to 1.5
// TTL: a GC pause or a descheduled process between acquiring and using.
func (wk *worker) maybePause(ttl time.Duration) {
	if wk.rng.Float64() >= wk.w.PauseShare {
		return
	}
	d := wk.randDur(3 * ttl / 2)
	time.Sleep(d)
	wk.rec.pause(d)
}

// check records errors that no fault explains: every Client of a
// semaphore agrees on its limit.
func (wk *worker) check(err error) {
	if errors.Is(err, redlock.ErrInvalidArgument) || errors.Is(err, redlock.ErrLimitMismatch) {
		wk.rec.unexpected(fmt.Sprintf("%s: %v", wk.kind, err))
	}
}

func (wk *worker) randDur(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(wk.rng.Int64N(int64(max)))
}

// useMargin is the validity a holder wants left before it starts an
// update, so that the update ends within the window even on a loaded
// machine.
func useMargin(ttl time.Duration) time.Duration { return ttl / 4 }

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
