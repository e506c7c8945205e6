package redlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/fence"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// The keys of the election "sched" of these tests.
const (
	electionKey     = "sched"
	electionRecord  = "{sched}:leader"
	electionCounter = "{sched}:fencing-token"
)

// mustElection returns the election "sched" of client with ttl.
func mustElection(t *testing.T, client *redlock.Client, ttl time.Duration) *redlock.Election {
	t.Helper()
	e, err := client.Election(electionKey, ttl)
	if err != nil {
		t.Fatalf("Election: %v", err)
	}
	return e
}

// mustCampaign campaigns on e as identity and fails the test if it does not
// lead.
func mustCampaign(t *testing.T, e *redlock.Election, identity string) *redlock.Leadership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	l, err := e.Campaign(ctx, identity)
	if err != nil {
		t.Fatalf("Campaign(%q): %v", identity, err)
	}
	return l
}

// mustLeader reads e's leader and fails the test unless there is one.
func mustLeader(t *testing.T, e *redlock.Election) redlock.Leader {
	t.Helper()
	got, err := e.Leader(context.Background())
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	return got
}

// electionKeys returns the keys of the election left on each node, but
// the fencing counter, which never expires.
func (c *cluster) electionKeys(t *testing.T) [][]string {
	t.Helper()
	c.settle(t)
	left := make([][]string, len(c.servers))
	for i, s := range c.servers {
		for _, k := range s.Keys() {
			if k != electionCounter {
				left[i] = append(left[i], k)
			}
		}
	}
	return left
}

// noElectionKeys fails the test if a node holds a lock key or a record of
// the election.
func (c *cluster) noElectionKeys(t *testing.T) {
	t.Helper()
	for i, keys := range c.electionKeys(t) {
		if len(keys) > 0 {
			t.Errorf("node %d holds %q, want nothing but the counter", i, keys)
		}
	}
}

// conns returns Conns of their own to c's servers, each behind a fault
// injector, for a Client whose faults are not those of the others.
func (c *cluster) ownConns(t *testing.T) ([]*faults.Conn, []driver.Conn) {
	t.Helper()
	var fs []*faults.Conn
	var conns []driver.Conn
	for _, s := range c.servers {
		rc := resp.Dial(s.Addr())
		t.Cleanup(func() { rc.Close() })
		f := faults.Wrap(rc)
		fs = append(fs, f)
		conns = append(conns, f)
	}
	return fs, conns
}

func TestElectionBadInput(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	var nilClient *redlock.Client
	custom := c.client(t, redlock.WithScripts(redlock.Scripts{Release: func(src string) string { return src + "\n" }}))
	for _, tt := range []struct {
		name     string
		client   *redlock.Client
		election string
		ttl      time.Duration
		want     string
	}{
		{"nil client", nilClient, "sched", time.Second, "nil *Client"},
		{"empty name", client, "", time.Second, "empty election name"},
		{"zero ttl", client, "sched", 0, "ttl 0s is below"},
		{"ttl within the node timeout", client, "sched", 200 * time.Millisecond, "leaves no validity"},
		{"brace without a tag", client, "a}b", time.Second, "has no hash tag and contains '}'"},
		{"custom scripts", custom, "sched", time.Second, "do not support WithScripts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := tt.client.Election(tt.election, tt.ttl)
			if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) || e != nil {
				t.Errorf("Election = %v, %v; want nil and an invalid argument error containing %q", e, err, tt.want)
			}
		})
	}

	ctx := context.Background()
	e := mustElection(t, client, time.Second)
	var nilElection *redlock.Election
	var nilLeadership *redlock.Leadership
	var nilCtx context.Context
	checks := []struct {
		name string
		err  func() error
		want string
	}{
		{"empty identity", func() error { _, err := e.Campaign(ctx, ""); return err }, "empty identity"},
		{"nil ctx", func() error { _, err := e.Campaign(nilCtx, "a"); return err }, "nil Context"},
		{"nil election", func() error { _, err := nilElection.Campaign(ctx, "a"); return err }, "Campaign of a nil *Election"},
		{"zero election", func() error { _, err := (&redlock.Election{}).Campaign(ctx, "a"); return err }, "no Client returned"},
		{"Leader of nil", func() error { _, err := nilElection.Leader(ctx); return err }, "Leader of a nil"},
		{"Observe nil ctx", func() error { _, err := e.Observe(nilCtx); return err }, "nil Context"},
		{"Do nil fn", func() error { return e.Do(ctx, "a", nil) }, "nil function"},
		{"Do empty identity", func() error { return e.Do(ctx, "", func(context.Context, *redlock.Leadership) error { return nil }) }, "empty identity"},
		{"Proclaim of nil", func() error { return nilLeadership.Proclaim(ctx, "a") }, "no Campaign returned"},
		{"Resign of zero", func() error { return (&redlock.Leadership{}).Resign(ctx) }, "no Campaign returned"},
	}
	for _, tt := range checks {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.err(); !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an invalid argument error containing %q", err, tt.want)
			}
		})
	}
	if got := nilLeadership.Term(); got != 0 {
		t.Errorf("Term of nil = %d, want 0", got)
	}
	if cause := context.Cause(nilLeadership.Context()); !errors.Is(cause, redlock.ErrInvalidArgument) {
		t.Errorf("Context of nil: cause %v, want an invalid argument error", cause)
	}

	l := mustCampaign(t, e, "a")
	if err := l.Proclaim(ctx, ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Proclaim(\"\") = %v, want an invalid argument error", err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	c.noElectionKeys(t)
}

// A leader publishes its identity and term; once it resigns, Leader says
// there is none and nothing of it is left on the nodes; every new leader
// has a greater term, whichever Client it campaigns through.
func TestElectionLeaderAndTerms(t *testing.T) {
	c := newCluster(t, 3)
	clients := []*redlock.Client{
		c.client(t, redlock.WithNodeTimeout(testNodeTimeout)),
		c.client(t, redlock.WithNodeTimeout(testNodeTimeout)),
	}
	elections := []*redlock.Election{mustElection(t, clients[0], 10*time.Second), mustElection(t, clients[1], 10*time.Second)}
	if _, err := elections[0].Leader(context.Background()); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
	}
	var last uint64
	for i := range 6 {
		e := elections[i%2]
		identity := []string{"alpha", "beta"}[i%2]
		l := mustCampaign(t, e, identity)
		if l.Term() <= last {
			t.Fatalf("campaign %d: term %d after term %d", i, l.Term(), last)
		}
		last = l.Term()
		got := mustLeader(t, elections[(i+1)%2])
		if got.Identity != identity || got.Term != l.Term() || got.HeldUntil.IsZero() {
			t.Fatalf("Leader = %+v, want %s with term %d and an end", got, identity, l.Term())
		}
		if got := c.holders(t, electionKey, mustValue(t, l)); got != 3 {
			t.Fatalf("the lock key is on %d nodes, want 3", got)
		}
		if err := l.Resign(context.Background()); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, redlock.ErrReleased) {
			t.Errorf("the resigned leadership's context has cause %v, want ErrReleased", cause)
		}
		if _, err := e.Leader(context.Background()); !errors.Is(err, redlock.ErrNoLeader) {
			t.Fatalf("Leader after Resign = %v, want ErrNoLeader", err)
		}
		c.noElectionKeys(t)
	}
}

// mustValue returns the value of the lock of l.
func mustValue(t *testing.T, l *redlock.Leadership) string {
	t.Helper()
	lock, ok := redlock.LockFromContext(l.Context())
	if !ok {
		t.Fatal("no lock in the leadership's context")
	}
	return lock.Value()
}

// etcd's Campaign could keep waiting after its own lease expired and then
// report leadership with no key. A waiting candidate here holds nothing:
// it waits through several of the leader's renewals and leads, with its
// key on the nodes and a greater term, once the leader resigns, woken by
// the release rather than its (hour-long) retry delay.
func TestElectionWaitingCandidateLeadsWithItsKeyAfterResign(t *testing.T) {
	servers, conns := notifyingNodes(t, 3)
	holder, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, holder)
	var attempts atomic.Int64
	waiter, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false),
		redlock.WithRetryStrategy(redlock.ConstantBackoff(neverPoll, 0, 1)), countingValues(&attempts))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, waiter)
	ttl := time.Second
	leader := mustCampaign(t, mustElection(t, holder, ttl), "first")
	e := mustElection(t, waiter, ttl)

	type result struct {
		l   *redlock.Leadership
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := e.Campaign(context.Background(), "second")
		done <- result{l, err}
	}()
	// The candidate is refused, subscribes and tries again at once (a
	// release in between would have gone unheard), then waits.
	eventually(t, "the candidate waits", func() bool { return attempts.Load() >= 2 })
	lock, _ := redlock.LockFromContext(leader.Context())
	start := lock.ValidUntil()
	eventually(t, "the leader renews twice", func() bool { return lock.ValidUntil().After(start.Add(ttl)) })
	if err := leader.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(safetyNet):
		t.Fatal("the candidate did not lead after the resignation")
	}
	if r.err != nil {
		t.Fatalf("Campaign: %v", r.err)
	}
	defer r.l.Resign(context.Background())
	if r.l.Term() <= leader.Term() {
		t.Errorf("term %d after term %d", r.l.Term(), leader.Term())
	}
	value := mustValue(t, r.l)
	held := 0
	for _, s := range servers {
		if got, err := s.Get(electionKey); err == nil && got == value {
			held++
		}
	}
	if held < 2 {
		t.Errorf("the new leader's key is on %d nodes, want a quorum", held)
	}
	if got := mustLeader(t, e); got.Identity != "second" || got.Term != r.l.Term() {
		t.Errorf("Leader = %+v, want second with term %d", got, r.l.Term())
	}
}

// A campaign paused between its grant and its return (here until the
// grant's validity has passed) does not return that grant: it releases it
// and goes on, and the leadership it returns is a later grant, the one
// that the nodes hold.
func TestElectionCampaignNeverReturnsAnExpiredGrant(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	e := mustElection(t, client, time.Second)
	var first *redlock.Lock
	redlock.SetGrantHook(e, func(l *redlock.Lock) {
		if first != nil {
			return
		}
		first = l
		for time.Now().Before(l.ValidUntil()) {
			time.Sleep(time.Millisecond)
		}
	})
	l := mustCampaign(t, e, "paused")
	defer l.Resign(context.Background())
	if first == nil {
		t.Fatal("the hook saw no grant")
	}
	if l.Term() <= first.Token() {
		t.Errorf("returned term %d, want more than the expired grant's %d", l.Term(), first.Token())
	}
	if got := c.holders(t, electionKey, first.Value()); got != 0 {
		t.Errorf("the expired grant is still on %d nodes", got)
	}
	if got := mustLeader(t, e); got.Term != l.Term() {
		t.Errorf("Leader has term %d, want the returned %d", got.Term, l.Term())
	}
}

// etcd left campaign keys behind after an error. Here a campaign whose
// requests are applied twice, or applied with their replies lost, and
// which its caller gives up, leaves neither a lock key nor a record.
func TestElectionFailedCampaignLeavesNoKeys(t *testing.T) {
	for _, mode := range []faults.Mode{faults.LoseReply, faults.Duplicate, faults.Fail} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newCluster(t, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var values atomic.Int64
			client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false),
				redlock.WithValueGenerator(func() (string, error) {
					if values.Add(1) == 3 {
						cancel() // the caller gives up during the third attempt
					}
					return "v" + string(rune('0'+values.Load())), nil
				}))
			e := mustElection(t, client, time.Second)
			c.setFaults(mode, mode)
			l, err := e.Campaign(ctx, "a")
			if mode == faults.Duplicate {
				// Re-sent requests are still one grant.
				if err != nil {
					t.Fatalf("Campaign: %v", err)
				}
				if got := mustLeader(t, e); got.Identity != "a" || got.Term != l.Term() {
					t.Errorf("Leader = %+v, want a with term %d", got, l.Term())
				}
				if err := l.Resign(context.Background()); err != nil {
					t.Fatalf("Resign: %v", err)
				}
			} else if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Campaign = %v, %v; want ErrNotAcquired and context.Canceled", l, err)
			}
			c.setFaults(faults.Pass, faults.Pass)
			c.noElectionKeys(t)
		})
	}
}

// Curator reported double leaders after a suspended session. A leader
// cut off from the nodes is told before its validity ends; after its keys
// expire another candidate leads with a greater term, and when the first
// comes back its term fences its writes and its Proclaim is refused.
func TestElectionSuspendedLeaderIsFencedByItsTerm(t *testing.T) {
	c := newCluster(t, 3)
	fs, conns := c.ownConns(t)
	suspended, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient(t, suspended)
	other := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	ttl := time.Second
	var resource fence.Memory

	old := mustCampaign(t, mustElection(t, suspended, ttl), "old")
	if err := resource.Accept("jobs", old.Term()); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		f.Set(faults.Hang)
	}
	<-old.Context().Done()
	if cause := context.Cause(old.Context()); !errors.Is(cause, redlock.ErrLockLost) {
		t.Fatalf("the suspended leader's context has cause %v, want ErrLockLost", cause)
	}
	for _, s := range c.servers {
		s.FastForward(ttl) // its keys expire
	}
	e := mustElection(t, other, ttl)
	next := mustCampaign(t, e, "next")
	defer next.Resign(context.Background())
	if next.Term() <= old.Term() {
		t.Fatalf("term %d after term %d", next.Term(), old.Term())
	}
	if err := resource.Accept("jobs", next.Term()); err != nil {
		t.Fatal(err)
	}

	// The old leader runs again and, not looking at its context, writes.
	for _, f := range fs {
		f.Set(faults.Pass)
	}
	if err := resource.Accept("jobs", old.Term()); !errors.Is(err, fence.ErrStale) {
		t.Errorf("the old leader's write = %v, want fence.ErrStale", err)
	}
	if err := old.Proclaim(context.Background(), "old again"); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("the old leader's Proclaim = %v, want ErrNotHeld", err)
	}
	if got := mustLeader(t, e); got.Identity != "next" || got.Term != next.Term() {
		t.Errorf("Leader = %+v, want next with term %d", got, next.Term())
	}
	// Its resignation touches nothing of the new leader's.
	if err := old.Resign(context.Background()); err == nil {
		t.Error("the old leader's Resign = nil, want an error")
	}
	if got := c.holders(t, electionKey, mustValue(t, next)); got != 3 {
		t.Errorf("the new leader's key is on %d nodes after the old one resigned", got)
	}
}

// A Proclaim sent twice, or applied with its reply lost, is one
// proclamation; a later one wins over an earlier one applied again; a
// Proclaim of a leadership whose key another owner took is refused on the
// nodes and changes nothing.
func TestElectionProclaim(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false))
	e := mustElection(t, client, 10*time.Second)
	l := mustCampaign(t, e, "a")
	ctx := context.Background()
	for i, mode := range []faults.Mode{faults.Duplicate, faults.LoseReply, faults.Pass} {
		identity := "a" + string(rune('1'+i))
		c.setFaults(mode)
		err := l.Proclaim(ctx, identity)
		c.setFaults(faults.Pass)
		if err != nil {
			t.Fatalf("Proclaim(%q) with node 0 in %v: %v", identity, mode, err)
		}
		c.settle(t)
		if got := mustLeader(t, e); got.Identity != identity || got.Term != l.Term() {
			t.Fatalf("Leader = %+v, want %s with term %d", got, identity, l.Term())
		}
		if l.Identity() != identity {
			t.Errorf("Identity() = %q, want %q", l.Identity(), identity)
		}
	}
	for i, s := range c.servers {
		if got := s.HGet(electionRecord, "identity"); got != "a3" {
			t.Errorf("node %d's record has identity %q, want a3", i, got)
		}
	}

	// Another owner takes the key on two nodes: the record there is no
	// longer the leader's, and Proclaim is refused.
	for _, s := range c.servers[:2] {
		s.Set(electionKey, "someone else")
	}
	if err := l.Proclaim(ctx, "b"); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Proclaim after a take-over = %v, want ErrNotHeld", err)
	}
	c.settle(t)
	for i, s := range c.servers[:2] {
		if got := s.HGet(electionRecord, "identity"); got == "b" {
			t.Errorf("node %d published b for a leadership it does not hold", i)
		}
	}
	if _, err := e.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader of a key held by a plain value = %v, want ErrNoLeader", err)
	}
	for _, s := range c.servers[:2] {
		s.Del(electionKey)
	}
	_ = l.Resign(ctx)
	if err := l.Proclaim(ctx, "c"); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Proclaim after Resign = %v, want ErrReleased", err)
	}
	c.noElectionKeys(t)
}

// Leader says "no leader" only when no leadership can hide among the
// nodes that failed; otherwise it says it cannot tell.
func TestElectionLeaderUnknown(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false))
	e := mustElection(t, client, 10*time.Second)
	ctx := context.Background()
	c.setFaults(faults.Fail)
	if _, err := e.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader with 1 of 3 nodes failing, none holding = %v, want ErrNoLeader", err)
	}
	c.setFaults(faults.Fail, faults.Fail)
	_, err := e.Leader(ctx)
	var ne *redlock.NodeError
	if errors.Is(err, redlock.ErrNoLeader) || !errors.As(err, &ne) || !errors.Is(err, faults.ErrInjected) {
		t.Errorf("Leader with 2 of 3 nodes failing = %v, want the nodes' errors and no ErrNoLeader", err)
	}
	c.setFaults(faults.Pass, faults.Pass)
	l := mustCampaign(t, e, "a")
	c.setFaults(faults.Fail)
	if got := mustLeader(t, e); got.Identity != "a" {
		t.Errorf("Leader with 1 node failing = %+v, want a", got)
	}
	c.setFaults(faults.Pass)
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// receiveLeader waits for the next state of an Observe.
func receiveLeader(t *testing.T, states <-chan redlock.Leader) redlock.Leader {
	t.Helper()
	select {
	case got, ok := <-states:
		if !ok {
			t.Fatal("Observe closed its channel")
		}
		return got
	case <-time.After(safetyNet):
		t.Fatal("Observe delivered nothing")
	}
	return redlock.Leader{}
}

// receiveUntil receives states until one is like want, and fails the test
// if a state in between has a term below the last one's.
func receiveUntil(t *testing.T, states <-chan redlock.Leader, want redlock.Leader) {
	t.Helper()
	var term uint64
	for {
		got := receiveLeader(t, states)
		if got.Term != 0 && got.Term < term {
			t.Fatalf("Observe went from term %d back to %d", term, got.Term)
		}
		term = max(term, got.Term)
		if got.Term == want.Term && got.Identity == want.Identity {
			return
		}
	}
}

// Observe never reported "no leader" in etcd. Here it delivers the
// current state first, then each leader, its proclamation, and no leader
// once it resigned, or once its leadership expired, which nothing
// announces; with and without notifications. Cancelling its ctx closes
// the channel.
func TestElectionObserveReportsNoLeader(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(map[bool]string{true: "notifications", false: "polling"}[notify], func(t *testing.T) {
			var servers []*miniredis.Miniredis
			var conns []driver.Conn
			if notify {
				servers, conns = notifyingNodes(t, 3)
			} else {
				c := newCluster(t, 3)
				servers, conns = c.servers, c.conns
			}
			client, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			defer closeClient(t, client)
			ttl := time.Second
			e := mustElection(t, client, ttl)
			ctx, cancel := context.WithCancel(context.Background())
			states, err := e.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := receiveLeader(t, states); got != (redlock.Leader{}) {
				t.Fatalf("first state %+v, want no leader", got)
			}
			l := mustCampaign(t, e, "a")
			receiveUntil(t, states, redlock.Leader{Identity: "a", Term: l.Term()})
			if err := l.Proclaim(ctx, "a2"); err != nil {
				t.Fatal(err)
			}
			receiveUntil(t, states, redlock.Leader{Identity: "a2", Term: l.Term()})
			if err := l.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			receiveUntil(t, states, redlock.Leader{})

			// A leader whose keys vanish without a release (a crash:
			// they expire) is reported gone too.
			crashed, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithReleaseOnClose(false))
			if err != nil {
				t.Fatal(err)
			}
			l2 := mustCampaign(t, mustElection(t, crashed, ttl), "b")
			receiveUntil(t, states, redlock.Leader{Identity: "b", Term: l2.Term()})
			closeClient(t, crashed) // its renewal ends, nothing is released
			for _, s := range servers {
				s.FastForward(ttl) // the keys expire
			}
			receiveUntil(t, states, redlock.Leader{})
			if got, err := e.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
				t.Errorf("Leader after the last state = %+v, %v; want ErrNoLeader", got, err)
			}
			cancel()
			for range states {
			}
		})
	}
}

// Do runs its function only while the caller leads, with the term, and
// resigns when it returns; a function that resigns itself is no error;
// its context ends when the leadership is lost.
func TestElectionDo(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	e := mustElection(t, client, time.Second)
	ctx := context.Background()
	var terms []uint64
	for range 2 {
		err := e.Do(ctx, "worker", func(ctx context.Context, l *redlock.Leadership) error {
			if got := mustLeader(t, e); got.Term != l.Term() || got.Identity != "worker" {
				t.Errorf("Leader in Do = %+v, want worker with term %d", got, l.Term())
			}
			terms = append(terms, l.Term())
			return l.Resign(ctx)
		})
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	if !slices.IsSorted(terms) || terms[0] == terms[1] {
		t.Errorf("terms %v, want strictly growing", terms)
	}
	c.noElectionKeys(t)

	fnErr := errors.New("scheduler stopped")
	err := e.Do(ctx, "worker", func(ctx context.Context, l *redlock.Leadership) error {
		for _, s := range c.servers {
			s.Del(electionKey) // taken away: the renewal finds nothing
		}
		<-ctx.Done()
		if cause := context.Cause(ctx); !errors.Is(cause, redlock.ErrLockLost) {
			t.Errorf("fn's context cause %v, want ErrLockLost", cause)
		}
		return fnErr
	})
	if !errors.Is(err, fnErr) || !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Do = %v, want fn's error and ErrLockLost", err)
	}
	c.noElectionKeys(t)
}

// A Resign whose replies are lost does not know it succeeded, and says
// so; the nodes hold nothing of the leadership all the same, and a Resign
// again, once the nodes answer, confirms.
func TestElectionResignWithLostRepliesLeavesNoKeys(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithSkipUnhealthyNodes(false))
	e := mustElection(t, client, 10*time.Second)
	l := mustCampaign(t, e, "a")
	if err := l.Proclaim(context.Background(), "a2"); err != nil {
		t.Fatal(err)
	}
	c.setFaults(faults.LoseReply, faults.LoseReply)
	if err := l.Resign(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Resign with 2 of 3 replies lost = %v, want ErrNotHeld", err)
	}
	c.setFaults(faults.Pass, faults.Pass)
	c.noElectionKeys(t)
	if err := l.Resign(context.Background()); err != nil {
		t.Errorf("Resign again = %v, want nil", err)
	}
	if _, err := e.Leader(context.Background()); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader = %v, want ErrNoLeader", err)
	}
}

// Close ends an Observe: its channel is closed, its goroutine returns
// (goleak checks) and its subscriptions end.
func TestElectionObserveEndsAtClose(t *testing.T) {
	servers, conns := notifyingNodes(t, 3)
	client, err := redlock.New(conns, redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	e := mustElection(t, client, time.Second)
	states, err := e.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	receiveLeader(t, states)
	closeClient(t, client)
	for range states {
	}
	// An unsubscription reaches the server after cancel returns.
	channel := "{sched}:leader-changed"
	eventually(t, "the subscriptions end", func() bool {
		for _, s := range servers {
			if s.PubSubNumSub(channel)[channel] != 0 {
				return false
			}
		}
		return true
	})
	if _, err := e.Observe(context.Background()); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Observe after Close = %v, want ErrClosed", err)
	}
}

// Candidates on several Clients campaign, proclaim and resign at once
// while a node at a time fails, loses replies, lags or hangs. On the one
// clock of the test, no two leaderships overlap between their campaign's
// return and the earlier of their resignation and validity, terms grow
// with time, an observer ends on "no leader", and nothing is left without
// an expiry.
func TestElectionConcurrentCandidatesUnderFaults(t *testing.T) {
	c := newCluster(t, 3)
	for _, s := range c.servers {
		s.ClockTTL(true) // keys a faulty node kept expire, as on Redis
	}
	const workers, terms = 4, 5
	ttl := time.Second
	type span struct {
		term       uint64
		start, end time.Time
	}
	spans := make(chan span, workers*terms)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()

	observer := mustElection(t, c.client(t, redlock.WithNodeTimeout(testNodeTimeout)), ttl)
	states, err := observer.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	scrambled := make(chan struct{})
	go func() {
		defer close(scrambled)
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				faults.Reset(c.faults)
				return
			case <-time.After(20 * time.Millisecond):
				faults.Scramble(rng, c.faults, 1)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		e := mustElection(t, c.client(t, redlock.WithNodeTimeout(testNodeTimeout)), ttl)
		wg.Go(func() {
			for i := range terms {
				l, err := e.Campaign(ctx, "worker")
				if err != nil {
					t.Errorf("worker %d: Campaign: %v", w, err)
					return
				}
				start := time.Now()
				_ = l.Proclaim(ctx, "worker "+strconv.Itoa(w)+" term "+strconv.Itoa(i))
				end := earliest(time.Now(), l.ValidUntil())
				_ = l.Resign(ctx)
				spans <- span{l.Term(), start, end}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-scrambled
	close(spans)

	var all []span
	for s := range spans {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b span) int { return a.start.Compare(b.start) })
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.term <= prev.term {
			t.Errorf("term %d began after term %d", cur.term, prev.term)
		}
		if cur.start.Before(prev.end) {
			t.Errorf("term %d began %v before term %d ended", cur.term, prev.end.Sub(cur.start), prev.term)
		}
	}
	if len(all) != workers*terms {
		t.Fatalf("%d leaderships, want %d", len(all), workers*terms)
	}

	// The observer ends on no leader: the last resignations may have
	// failed on a faulty node, but a quorum holds no leader.
	receiveUntil(t, states, redlock.Leader{})
	cancel()
	for range states {
	}
	for _, f := range c.faults {
		f.Wait()
	}
	c.settle(t)
	for i, s := range c.servers {
		for _, k := range s.Keys() {
			if k != electionCounter && s.TTL(k) <= 0 {
				t.Errorf("node %d holds %s without an expiry", i, k)
			}
		}
	}
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
