package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Election elects one leader on a name among the candidates of every
// Client that campaigns on it: one scheduler across the fleet, say.
//
//	e, err := client.Election("scheduler", 10*time.Second)
//	...
//	err = e.Do(ctx, hostname, func(ctx context.Context, l *redlock.Leadership) error {
//		return runScheduler(ctx, l.Term())
//	})
//
// A leadership is a lock on the name, renewed while it lasts, so at most
// one leadership is valid at any instant. Its term ([Leadership.Term]) is
// the lock's fencing token: every new leader's term is greater than those
// of all leaders before it, whatever the Client's [WithFencing].
//
// # Fencing
//
// A leader is told that it lost the leadership, by its context, before its
// validity ends; but a process that is paused (a long GC pause, a
// suspended VM) cannot look, and may act as leader after a new one was
// elected. As with any election built on leases, nothing but the term
// makes that harmless: pass it with every write to the resource, which must
// reject a term lower than the highest it has accepted. The fencing
// requirements apply: every node runs with appendonly yes and appendfsync
// always, or terms can go back after a restart.
//
// # Keys
//
// The lock key is the name, as for [Client.Lock], with the key prefix of
// [WithKeyPrefix]; its fencing counter and the leader's record (identity,
// term) are the name followed by ":fencing-token" and ":leader", in the
// name's hash tag or in one made of the whole name. Changes of the leader
// are announced on the channel of the name followed by ":leader-changed".
//
// An Election is safe for concurrent use. It holds no resources of its
// own: its leaderships are locks of the Client, released by Close.
type Election struct {
	client *Client
	name   string
	req    request // of the lock on name, always fenced
	record string  // the leader's record
	// changed and released are the channels on which the scripts
	// announce a change of the leader and the release of the lock key.
	changed, released string
	// granted, when not nil, is called with each lock a campaign was
	// granted, before its renewal starts: a test pauses there.
	granted func(*Lock)
}

// The suffixes of an election's record and change channel, after its name
// (see Election).
const (
	leaderSuffix        = ":leader"
	leaderChangedSuffix = ":leader-changed"
)

// ErrNoLeader is matched by the error of [Election.Leader] when no
// candidate leads: no quorum of nodes holds one leadership, and too few
// nodes failed for one to be hidden among them.
var ErrNoLeader = errors.New("redlock: no leader")

// Election returns the election on name, whose leaderships last ttl
// between renewals. It does no I/O. It reports an error matching
// ErrInvalidArgument for an empty name, one without a hash tag that
// contains '}' (its keys could not share a hash slot), a ttl that Lock
// would refuse, and a Client made with [WithScripts], whose scripts
// elections do not run.
func (c *Client) Election(name string, ttl time.Duration) (*Election, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	switch {
	case name == "":
		return nil, invalidf("empty election name")
	case c.cfg.anyCustomScript():
		return nil, invalidf("elections run scripts of their own and do not support WithScripts")
	}
	req, err := c.newRequest([]string{name}, ttl)
	if err != nil {
		return nil, err
	}
	if req.fenced, err = fencedKeys(req.keys); err != nil {
		return nil, invalidf("election name %s has no hash tag and contains '}', so its keys cannot share a hash slot; give it a hash tag", keytext.Quote(name))
	}
	key := req.keys[0]
	return &Election{
		client:   c,
		name:     name,
		req:      req,
		record:   scripts.SameSlot(key, leaderSuffix),
		changed:  scripts.SameSlot(key, leaderChangedSuffix),
		released: scripts.ReleaseChannel(key),
	}, nil
}

// Name returns the election's name.
func (e *Election) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// TTL returns the time to live of the election's leaderships.
func (e *Election) TTL() time.Duration {
	if e == nil {
		return 0
	}
	return e.req.ttl
}

// check reports why op cannot run on e.
func (e *Election) check(op string) error {
	switch {
	case e == nil:
		return invalidf("%s of a nil *Election", op)
	case e.client == nil:
		return invalidf("%s of an Election that no Client returned", op)
	}
	return nil
}

// Campaign waits until this caller leads, or ctx ends, and returns its
// leadership, published with identity (a host name, an address: what
// [Election.Leader] tells the others). It retries at the delays of the
// Client's RetryStrategy, starting it over whenever it gives up, and tries
// again as soon as the leader resigns (see [WithReleaseNotifications]).
// A waiting candidate holds nothing on the nodes.
//
// The leadership is renewed in the background until Resign, a loss, or
// Close; its context carries ctx's values, not its cancellation. Campaign
// never returns a leadership whose validity has passed: one that a pause
// between its grant and its return let run out is released, and the
// campaign goes on.
//
// When ctx ends first, the error matches ErrNotAcquired and ctx.Err(),
// and the attempt in flight is released on every node. An empty identity
// is an error matching ErrInvalidArgument. Observers see a campaign as a
// Lock call on the election's name.
func (e *Election) Campaign(ctx context.Context, identity string) (*Leadership, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	return e.campaign(ctx, identity, detached(ctx))
}

// campaign is Campaign, whose leadership's context derives from parent.
func (e *Election) campaign(ctx context.Context, identity string, parent context.Context) (_ *Leadership, err error) {
	if err := e.check("Campaign"); err != nil {
		return nil, err
	}
	if identity == "" {
		return nil, invalidf("empty identity")
	}
	c := e.client
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	retry := &untilLeading{inner: c.cfg.retry}
	for {
		l, err := e.campaignOnce(ctx, identity, retry)
		if err != nil {
			return nil, err
		}
		if e.granted != nil {
			e.granted(l)
		}
		lctx, stop := l.KeepAlive(parent)
		if lctx.Err() == nil {
			return &Leadership{election: e, lock: l, ctx: lctx, stop: stop, identity: identity}, nil
		}
		cause := context.Cause(lctx)
		stop()
		_ = l.release(ctx) // its keys expire where this fails
		if !errors.Is(cause, ErrExpired) {
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, cause)
		}
	}
}

// campaignOnce makes attempts until one is granted or the campaign ends.
func (e *Election) campaignOnce(ctx context.Context, identity string, retry RetryStrategy) (l *Lock, err error) {
	c := e.client
	trace := c.cfg.obs.startLock(ctx, e.req, len(c.nodes))
	if trace != nil {
		defer func() { trace.done(l, err) }()
	}
	return c.retry(ctx, e.req, retry, func(attempt int) (*Lock, error) {
		trace.attemptStart(attempt)
		value, err := c.freshValue()
		if err != nil {
			return nil, err
		}
		return c.attemptFenced(ctx, e.req, value, trace, &candidate{election: e, identity: identity})
	})
}

// untilLeading is the retry strategy of a campaign: inner's delays,
// started over whenever inner gives up. A strategy that never retries
// (NoRetry) is replaced by the default delays.
type untilLeading struct {
	inner  RetryStrategy
	offset int // retries of inner's earlier runs
}

func (r *untilLeading) NextDelay(retry int) (time.Duration, bool) {
	if d, ok := r.inner.NextDelay(retry - r.offset); ok {
		return d, true
	}
	r.offset = retry - 1
	if d, ok := r.inner.NextDelay(1); ok {
		return d, true
	}
	return defaultRetryDelay + randomBelow(defaultRetryJitter), true
}

// candidate is a campaign's attempt at an election.
type candidate struct {
	election *Election
	identity string
}

// fenceSpec returns phase 2 of a campaign attempt with value and token:
// the lock's Fence, which also publishes the candidate's record.
func (cd *candidate) fenceSpec(req request, value string, token int64) roundSpec {
	e := cd.election
	return roundSpec{
		script: scripts.ElectionFence, keys: []string{req.keys[0], req.fenced[1], e.record},
		args:    []string{value, strconv.FormatInt(token, 10), cd.identity, e.changed},
		timeout: req.nodeTimeout, yes: isOne, every: e.client.cfg.waitEvery,
	}
}

// extendSpec returns the round that extends a leadership held with value,
// and its record with it.
func (e *Election) extendSpec(req request, value string) roundSpec {
	return roundSpec{
		script: scripts.ElectionExtend, keys: []string{req.keys[0], e.record}, args: []string{value, req.ttlArg},
		timeout: req.nodeTimeout, yes: isOne, every: e.client.cfg.waitEvery,
	}
}

// releaseSpec returns the round that releases a leadership, or a failed
// attempt, held with value: the lock key and the record, each only if it
// is value's. A release that fails on a node is sent again, as that of a
// failed attempt is, unless the node is failing.
func (e *Election) releaseSpec(req request, value string, yes func(result) bool) roundSpec {
	c := e.client
	return roundSpec{
		script: scripts.ElectionRelease, keys: []string{req.keys[0], e.record}, args: []string{value, e.released, e.changed},
		timeout: req.nodeTimeout, yes: yes, every: c.cfg.waitEvery,
		again: func(i int, err error) bool { return !c.fails.failed(i) && !isCrossSlot(err) },
	}
}

// Do campaigns on e with identity as Campaign does, calls fn with the
// leadership's context and the leadership once this caller leads, and
// resigns when fn returns, also when it panics: client-go's
// OnStartedLeading, with the leadership's end in fn's context.
//
// fn's context is cancelled when ctx is done, and as the leadership's
// context is: before the validity ends when the leadership is lost. fn
// must stop acting as leader then. Do returns the error of Campaign when
// it never leads; otherwise fn's error joined with the cause of a lost
// leadership and the error of the resignation, each named once, as
// [Client.Do] does.
func (e *Election) Do(ctx context.Context, identity string, fn func(ctx context.Context, l *Leadership) error) (err error) {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if fn == nil {
		return invalidf("nil function")
	}
	l, err := e.campaign(ctx, identity, ctx)
	if err != nil {
		return err
	}
	defer func() {
		cause := context.Cause(l.ctx) // before stop, which cancels it too
		l.stop()
		resigned := l.lock.Unlock(ctx)
		if errors.Is(cause, ErrReleased) && resigned == ErrReleased {
			resigned = nil // fn resigned
		}
		err = doResult(err, cause, resigned)
	}()
	return fn(l.ctx, l)
}
