package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Leader is who leads an election, as read by [Election.Leader] and
// delivered by [Election.Observe]. The zero Leader, whose Term is 0, is
// "no leader".
type Leader struct {
	// Identity is the one the leader published: that of its campaign or
	// of its latest proclamation that the nodes holding it report.
	Identity string
	// Term is the leadership's term; 0 for no leader.
	Term uint64
	// HeldUntil is the latest time until which a quorum of nodes may
	// still hold the leadership, on the local clock, unless renewed: after
	// it, this leader no longer leads.
	HeldUntil time.Time
}

// Leader reads who leads e from every node. It returns the leader that a
// quorum of nodes holds; an error matching ErrNoLeader when no candidate
// leads, so few nodes having failed that none could hold a quorum unseen;
// and, when too many nodes failed to tell, an error holding their
// *NodeErrors. Each node is bounded by the node timeout of e's TTL, and
// Leader waits for every node. It only reads, and its answer is out of
// date as soon as it returns: only the term checked at a resource orders
// what leaders do.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.check("Leader"); err != nil {
		return Leader{}, err
	}
	c := e.client
	if err := c.enter(ctx); err != nil {
		return Leader{}, err
	}
	defer c.calls.Done()
	keys := []string{e.req.keys[0], e.record}
	timeout := e.req.nodeTimeout
	replies := c.readEvery(ctx, timeout, scripts.ElectionLeader, keys, func(reply any, at time.Time) (any, error) {
		s, err := parseLeaderReply(reply)
		s.ReadAt = at
		return s, err
	})
	states := make([]leaderState, len(c.nodes))
	nodes := make([]NodeState, len(c.nodes))
	var errs []error
	for i, r := range replies {
		switch {
		case r.Err == quorum.ErrPending && ctx.Err() == nil:
			r.Err = c.timeoutError(i, timeout, r.Err)
		case r.Err == quorum.ErrPending:
			r.Err = ctx.Err()
		}
		if r.Err != nil {
			nodes[i].Err = &NodeError{Node: i, Err: r.Err}
			errs = append(errs, nodes[i].Err)
			continue
		}
		states[i] = r.Value.(leaderState)
		nodes[i] = states[i].NodeState
	}
	return e.decide(states, nodes, errs)
}

// leaderState is one node's reply to election_leader.lua: the holder of
// the lock key in Value, and the holder's record, if any.
type leaderState struct {
	NodeState
	record   bool
	identity string
	term     uint64
	seq      uint64
}

// parseLeaderReply reads the reply of election_leader.lua: 0, or
// {holder, pttl, identity, term, seq} with the last three nil when the
// holder has no record.
func parseLeaderReply(reply any) (leaderState, error) {
	var s leaderState
	if reply == int64(0) {
		return s, nil
	}
	r, ok := reply.([]any)
	if !ok || len(r) != 5 {
		return s, fmt.Errorf("unexpected reply %#v", reply)
	}
	holder, ok1 := r[0].(string)
	pttl, ok2 := r[1].(int64)
	if !ok1 || !ok2 || holder == "" {
		return s, fmt.Errorf("unexpected reply %#v", reply)
	}
	s.Exists, s.Value = true, holder
	switch {
	case pttl > 0:
		s.TTL = time.Duration(pttl) * time.Millisecond
	case pttl == -1:
		s.NoExpiry = true
	}
	if r[2] == nil {
		return s, nil
	}
	identity, ok1 := r[2].(string)
	term, err1 := parseCount(r[3])
	seq, err2 := parseCount(r[4])
	if !ok1 || err1 != nil || err2 != nil || term == 0 {
		return s, fmt.Errorf("the leader's record is not one an election wrote")
	}
	s.record, s.identity, s.term, s.seq = true, identity, term, seq
	return s, nil
}

// parseCount reads a decimal count of a record.
func parseCount(v any) (uint64, error) {
	text, ok := v.(string)
	if !ok {
		return 0, errors.New("not a string")
	}
	return strconv.ParseUint(text, 10, 64)
}

// decide returns the leader that the nodes' states name, as Leader says.
func (e *Election) decide(states []leaderState, nodes []NodeState, errs []error) (Leader, error) {
	q := quorum.Size(len(nodes))
	holder, until, held := quorumHolder(nodes, q)
	if held {
		var best *leaderState
		for i := range states {
			s := &states[i]
			if s.Value == holder && s.record && (best == nil || s.seq > best.seq) {
				best = s
			}
		}
		if best == nil {
			return Leader{}, fmt.Errorf("%w: %s is held by a lock that is no leadership", ErrNoLeader, keytext.Quote(e.name))
		}
		return Leader{Identity: best.identity, Term: best.term, HeldUntil: until}, nil
	}
	most := 0
	counts := make(map[string]int)
	for _, s := range nodes {
		if s.Err == nil && s.Value != "" {
			counts[s.Value]++
			most = max(most, counts[s.Value])
		}
	}
	if most+len(errs) < q {
		return Leader{}, fmt.Errorf("%w of %s", ErrNoLeader, keytext.Quote(e.name))
	}
	return Leader{}, fmt.Errorf("redlock: leader of %s unknown: %d of %d nodes failed: %w", keytext.Quote(e.name), len(errs), len(nodes), errors.Join(errs...))
}

// Observe delivers who leads e, first as it is when Observe starts and
// then at every change: a new leader, a new identity, and no leader (the
// zero Leader) once a leader resigned or its leadership expired. The
// channel is closed when ctx ends or the Client is closed.
//
// Each state is read from a quorum as [Election.Leader] reads it: again
// whenever a node announces a change (a campaign won, a proclamation, a
// resignation; see [WithReleaseNotifications]), at the end of the
// leader's HeldUntil, and every quarter of e's TTL, so that changes whose
// announcement was lost and leaderships that expired, which announce
// nothing, are seen too. A read that too many nodes fail delivers nothing.
// A receiver that falls behind gets the latest state, not those in
// between; so the last state delivered before a quiet spell is the state
// of the nodes.
//
// Observe returns an error matching ErrInvalidArgument for a nil ctx or
// Election, and ErrClosed after Close. While it runs it holds a
// subscription on each node whose Conn can notify, and one goroutine.
func (e *Election) Observe(ctx context.Context) (<-chan Leader, error) {
	if err := e.check("Observe"); err != nil {
		return nil, err
	}
	c := e.client
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	out := make(chan Leader)
	go func() {
		defer c.calls.Done() // entered above
		defer close(out)
		e.observe(ctx, out)
	}()
	return out, nil
}

// observe runs Observe until ctx ends or the Client is closed.
func (e *Election) observe(ctx context.Context, out chan<- Leader) {
	c := e.client
	poke := make(chan struct{}, 1)
	subs := e.subscribe(ctx, poke)
	defer subs.end()
	poll := e.req.ttl / 4
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last, pending Leader
	delivered, waiting := false, false
	for {
		var send chan<- Leader
		if waiting {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case send <- pending:
			last, delivered, waiting = pending, true, false
			continue
		case <-poke:
		case <-timer.C:
		}
		now, err := e.Leader(ctx)
		next := poll
		switch {
		case err == nil && !now.HeldUntil.IsZero():
			next = min(next, time.Until(now.HeldUntil)+time.Millisecond)
		case err == nil:
		case errors.Is(err, ErrNoLeader):
			now = Leader{}
		case errors.Is(err, ErrClosed), ctx.Err() != nil:
			return
		default:
			timer.Reset(next)
			continue
		}
		switch {
		case delivered && now.same(last):
			waiting = false
		case !waiting || !now.same(pending):
			pending, waiting = now, true
		default:
			pending = now // its HeldUntil is later
		}
		// A node whose clock runs slow may keep the key a little past
		// HeldUntil: read again after the drift allowance, not at once.
		timer.Reset(max(next, e.req.drift))
	}
}

// same reports whether l and other name the same leader and identity.
func (l Leader) same(other Leader) bool {
	return l.Term == other.Term && l.Identity == other.Identity
}

// subscriptions are an Observe's subscriptions on the nodes.
type subscriptions struct {
	mu      sync.Mutex
	cancels []func()
	ended   bool
}

// subscribe subscribes to e's change channel on every node that can
// notify; each message puts a value in poke, unless one is there. A
// subscription that a node confirms after end was called is cancelled at
// once.
func (e *Election) subscribe(ctx context.Context, poke chan struct{}) *subscriptions {
	c := e.client
	subs := &subscriptions{}
	if c.notifiers() == nil {
		return subs
	}
	c.subscribeAll(ctx, e.req.nodeTimeout, e.changed,
		func(int, string) {
			select {
			case poke <- struct{}{}:
			default:
			}
		},
		func(cancel func()) bool {
			subs.mu.Lock()
			defer subs.mu.Unlock()
			if subs.ended {
				return false
			}
			subs.cancels = append(subs.cancels, cancel)
			return true
		})
	return subs
}

// end cancels the subscriptions.
func (s *subscriptions) end() {
	s.mu.Lock()
	s.ended = true
	cancels := s.cancels
	s.cancels = nil
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
