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

// The five ways a worker holds a lock.
const (
	kindPlain     = "plain"     // Lock, use, Unlock
	kindFenced    = "fenced"    // the same with a fencing token and writes to the fenced store
	kindDo        = "do"        // Client.Do with automatic renewal
	kindKeepAlive = "keepalive" // a fenced Lock kept by Lock.KeepAlive
	kindShared    = "shared"    // one Lock used by several goroutines: KeepAlive, Extend, Unlock (see worker.shared)
)

var kinds = []string{kindPlain, kindFenced, kindDo, kindKeepAlive, kindShared}

// workload says how the workers use their locks.
type workload struct {
	Workers   int
	Resources []string
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

func (w workload) maxTTL() time.Duration { return maxOf(w.TTLs) }

// longestTTL is the longest TTL a key of the run may get: shared locks are
// extended beyond the TTL they were taken for.
func (w workload) longestTTL() time.Duration { return maxExtendTTL(w.maxTTL()) }

// clients are one plain and one fenced redlock.Client per adapter, each
// reaching the nodes through the proxies and the nodes' reply faults.
type clients struct {
	plain, fenced []*redlock.Client
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
		c.plain, c.fenced, c.names = append(c.plain, plain), append(c.fenced, fenced), append(c.names, a.Name)
	}
	return c
}

// run starts the workers and returns a function that stops them and waits
// for them to return.
func (w workload) run(c clients, rec *recorder, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range w.Workers {
		wk := worker{
			w:    w,
			rec:  rec,
			kind: kinds[i%len(kinds)],
			rng:  rand.New(rand.NewPCG(seed, uint64(i)+1)),
		}
		// Worker i runs kind i mod 5 over adapter i mod 4: the counts
		// share no factor, so each adapter runs several kinds.
		a := i % len(c.plain)
		wk.plain, wk.fenced, wk.adapter = c.plain[a], c.fenced[a], c.names[a]
		wg.Go(func() { wk.loop(ctx) })
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
		}
	}
}

// lock calls Lock and records the attempt; it returns nil when no lock
// was granted.
func (wk *worker) lock(ctx context.Context, c *redlock.Client, resource string, ttl time.Duration) (*redlock.Lock, grant) {
	g := grant{ID: wk.rec.newID(), Resource: resource, Kind: wk.kind, Adapter: wk.adapter, Start: wk.rec.now()}
	l, err := c.Lock(ctx, resource, ttl)
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

// do holds a lock through Client.Do; its window ends when fn returns, the
// context Do hands out is cancelled or the lock's validity ends, whichever
// comes first. The holder trusts the context alone: Do promises that
// ctx.Err() reports a lock that can no longer be guaranteed.
func (wk *worker) do(ctx context.Context, resource string, ttl time.Duration) {
	start := wk.rec.now()
	called := false
	err := wk.plain.Do(ctx, resource, ttl, func(lctx context.Context) error {
		called = true
		g := grant{ID: wk.rec.newID(), Resource: resource, Kind: wk.kind, Adapter: wk.adapter, Start: start, Acquired: wk.rec.now()}
		wk.rec.attempt(wk.kind, nil, g.Acquired-g.Start)
		l, ok := redlock.LockFromContext(lctx)
		if !ok {
			wk.rec.unexpected("do: LockFromContext found no lock in the context Do passed")
			return nil
		}
		g.End = wk.holdRenewed(lctx, l, g, ttl, func() bool { return lctx.Err() == nil })
		wk.rec.addGrant(g)
		return nil
	})
	if !called {
		wk.check(err)
		if ctx.Err() == nil {
			wk.rec.attempt(wk.kind, err, wk.rec.now()-start)
		}
	}
}

// keepAlive holds a fenced lock renewed by Lock.KeepAlive.
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
// the fenced store for a fenced lock. A fenced holder whose validity has
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

// check records errors that no fault explains.
func (wk *worker) check(err error) {
	if errors.Is(err, redlock.ErrInvalidArgument) {
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
