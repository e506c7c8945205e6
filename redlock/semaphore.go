package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Semaphore hands out at most Limit permits on one name at a time, over
// the nodes of its Client: at most 4 exports running across the fleet, say.
//
//	sem, err := client.Semaphore("exports", 4)
//	...
//	permit, err := sem.Acquire(ctx, 30*time.Second)
//	...
//	defer permit.Unlock(ctx)
//
// A permit is a [*Lock] on one of Limit slots: Extend, KeepAlive, Unlock,
// ValidUntil and [LockFromContext] work on it as on any lock, and its
// [Lock.Key] is its slot's key. It is valid until its ValidUntil, like a
// lock, and expires on the nodes when its holder dies.
//
// # Why at most Limit
//
// Each slot is an ordinary lock key, and a permit is a slot that a quorum
// of nodes granted within the validity: by the argument that makes a lock
// safe, each slot has at most one valid holder, so at most Limit permits
// are valid at any instant, with the fault tolerance of a lock, whatever
// the limit. On each node one script claims the first free slot in an
// order the attempt drew at random (or the slot already holding the
// attempt's value, for a request applied twice). The attempt keeps the
// slot a quorum granted, and releases every other slot it may have
// claimed, on every node; with no slot granted by a quorum it releases
// them all and retries, as Lock does.
//
// The tempting design, where each node admits at most Limit holders and a
// permit needs a majority of nodes, admits more: with 3 nodes and a limit
// of 2, holders admitted on nodes {A,B}, {B,C} and {A,C} fill every node
// to its limit and each has a majority, so 3 permits are live.
//
// # The limit
//
// The limit is part of the semaphore's identity. Each node keeps a record
// of it beside the slots, and an acquire that finds another limit there
// fails with an error matching [ErrLimitMismatch], rather than sharing a
// larger limit with others. The record lasts on each node as long as the
// longest permit it admitted: acquires and extends of permits give it at
// least the TTL of every slot they see held, and it expires by itself once
// they have. To change a limit, stop every holder of the old one and wait
// out its longest TTL. Take a permit over with [Semaphore.Resume], not
// [Client.Resume]: the latter makes a plain lock on the slot, whose
// extends do not lengthen the record, so that a Semaphore of a larger
// limit could be admitted beside it once the record expired.
//
// # Fencing
//
// With [WithFencing] each permit carries a token ([Lock.Token]), counted
// per slot: it is greater than the token of every earlier permit on the
// same slot, not than those of the other slots, whose holders may be valid
// at the same time. A resource that gives each slot a share of its own
// (one of 4 export queues, say, by [Lock.Key]) checks the token of that
// share as it would a lock's: it rejects a token lower than the highest it
// has accepted for that slot. A resource that all permits share cannot
// order their writes by tokens at all.
//
// # Keys
//
// The slots are the name followed by ":permit:0", ":permit:1", ...
// and the record the name followed by ":limit", all in the name's hash
// tag, or in one made of the whole name when it has none (as for a fencing
// counter), so that one Redis Cluster node holds them all. The key prefix
// of [WithKeyPrefix] applies before them.
//
// A Semaphore is safe for concurrent use. It holds no resources of its
// own: its permits are the Client's, as locks are.
type Semaphore struct {
	client   *Client
	name     string
	limit    int
	limitArg string   // limit as the scripts' argument
	slots    []string // the slots' names, as a permit's Key names them
	keys     []string // the slots' keys, with the key prefix, then the record's
	counters []string // the slots' fencing counters with WithFencing, else nil
	order    orderKey // orders the attempts of this Client on the slots
	// permute returns the order in which an attempt tries the slots; a
	// test sets it to make a schedule deterministic.
	permute func(n int) []int
}

// MaxSemaphoreLimit is the largest limit of a [Semaphore]. Every acquire
// reads every slot on each node, so the cost of an acquire grows with the
// limit.
const MaxSemaphoreLimit = 1024

// The suffixes of a semaphore's keys, after its name (see Semaphore).
const (
	permitSuffix = ":permit:"
	limitSuffix  = ":limit"
)

// ErrLimitMismatch is matched by the error of an Acquire that found the
// semaphore's name in use with another limit on a node. Its message names
// both limits. Nothing is acquired; the call does not retry.
var ErrLimitMismatch = errors.New("redlock: semaphore limit mismatch")

// Semaphore returns the semaphore on name with at most limit permits. It
// does no I/O. It reports an error matching ErrInvalidArgument for an
// empty name, a limit below 1 or above [MaxSemaphoreLimit], a name without
// a hash tag that contains '}' (its keys could not share one), and a
// Client made with [WithScripts], whose scripts semaphores do not run.
func (c *Client) Semaphore(name string, limit int) (*Semaphore, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	switch {
	case name == "":
		return nil, invalidf("empty semaphore name")
	case limit < 1:
		return nil, invalidf("semaphore limit %d is below 1", limit)
	case limit > MaxSemaphoreLimit:
		return nil, invalidf("semaphore limit %d is above the maximum of %d", limit, MaxSemaphoreLimit)
	case !scripts.HasHashTag(name) && strings.IndexByte(name, '}') >= 0:
		return nil, invalidf("semaphore name %s has no hash tag and contains '}', so its keys cannot share a hash slot; give it a hash tag", keytext.Quote(name))
	case c.cfg.anyCustomScript():
		return nil, invalidf("semaphores run scripts of their own and do not support WithScripts")
	}
	s := &Semaphore{client: c, name: name, limit: limit, limitArg: strconv.Itoa(limit), permute: rand.Perm}
	s.slots = make([]string, limit)
	s.keys = make([]string, limit+1)
	for i := range limit {
		s.slots[i] = scripts.SameSlot(name, permitSuffix+strconv.Itoa(i))
		s.keys[i] = c.cfg.keyPrefix + s.slots[i]
	}
	s.keys[limit] = c.cfg.keyPrefix + scripts.SameSlot(name, limitSuffix)
	if c.cfg.fencing {
		s.counters = make([]string, limit)
		for i := range limit {
			s.counters[i] = scripts.SameSlot(s.keys[i], fenceSuffix) // a slot key has a hash tag
		}
	}
	s.order = orderKey{multi: true, name: joinSorted(s.slots)}
	return s, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Limit returns the most permits the semaphore hands out at once.
func (s *Semaphore) Limit() int {
	if s == nil {
		return 0
	}
	return s.limit
}

// check reports why op cannot run on s.
func (s *Semaphore) check(op string) error {
	switch {
	case s == nil:
		return invalidf("%s of a nil *Semaphore", op)
	case s.client == nil:
		return invalidf("%s of a Semaphore that no Client returned", op)
	}
	return nil
}

// Acquire acquires a permit for ttl, retrying as the Client's
// RetryStrategy allows while every slot is held or too few nodes answer.
// A waiting Acquire hears the release of any slot, as Lock does (see
// [WithReleaseNotifications]): while it waits, the Client subscribes on
// each node to every slot's release channel. The permit is valid until
// its ValidUntil; Unlock releases it. Observers see an Acquire as a Lock
// call on the semaphore's name.
//
// Errors are as for [Client.Lock]: a *QuorumError matching ErrNotAcquired
// describes the last attempt, its Keys the semaphore's name, its Granted
// the nodes that granted the slot most of them granted, and its Refused
// the others that answered. An error matching ErrLimitMismatch ends the
// call at once. Each attempt waits for the reply of every node, up to the
// per-node timeout.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return s.acquire(ctx, ttl, nil)
}

// TryAcquire makes a single attempt to acquire a permit for ttl, without
// retries. Errors are as for Acquire.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return s.acquire(ctx, ttl, NoRetry())
}

// Resume takes over a permit acquired elsewhere from its slot's key
// ([Lock.Key]) and value ([Lock.Value]), as [Client.Resume] takes over a
// lock, and returns it as a permit of s: its extends keep the
// semaphore's limit record on the nodes as long as the slot. A key that
// is none of s's slots is an error matching ErrInvalidArgument. When a
// Lock of the Client already holds value on key, Resume extends and
// returns that Lock, as Client.Resume does.
func (s *Semaphore) Resume(ctx context.Context, key, value string, ttl time.Duration) (*Lock, error) {
	if err := s.check("Resume"); err != nil {
		return nil, err
	}
	if !slices.Contains(s.slots, key) {
		return nil, invalidf("%s is no slot of semaphore %s", keytext.Quote(key), keytext.Quote(s.name))
	}
	return s.client.resume(ctx, key, value, ttl, s)
}

// Do acquires a permit for ttl as Acquire does, calls fn while holding it
// and releases it when fn returns, with the renewal, the context and the
// errors of [Client.Do].
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	if err := s.check("Do"); err != nil {
		return err
	}
	if fn == nil {
		return invalidf("nil function")
	}
	return hold(ctx, fn, func() (*Lock, error) { return s.acquire(ctx, ttl, nil) })
}

func (s *Semaphore) acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (l *Lock, err error) {
	if err := s.check("Acquire"); err != nil {
		return nil, err
	}
	c := s.client
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	// The request of one slot checks ttl; all is the same over every slot.
	one, err := c.newRequest(s.slots[:1], ttl)
	if err != nil {
		return nil, err
	}
	all := one
	all.names, all.keys, all.every = s.slots, s.keys[:s.limit:s.limit], true
	named := one
	named.names = []string{s.name}
	trace := c.cfg.obs.startLock(ctx, named, len(c.nodes))
	if trace != nil {
		defer func() { trace.done(l, err) }()
	}
	return c.retry(ctx, all, retry, func(attempt int) (*Lock, error) {
		trace.attemptStart(attempt)
		return s.attempt(ctx, one, trace)
	})
}

// attempt makes one round of claims with a fresh value, keeps the slot
// that a quorum granted within the validity, if any, and releases every
// other slot it may have claimed on every node.
func (s *Semaphore) attempt(ctx context.Context, one request, trace *lockTrace) (*Lock, error) {
	c := s.client
	value, err := c.freshValue()
	if err != nil {
		return nil, err
	}
	order := s.permute(s.limit)
	keys := make([]string, s.limit+1, s.limit+1+len(s.counters))
	for pos, slot := range order {
		keys[pos] = s.keys[slot]
	}
	keys[s.limit] = s.record()
	if s.counters != nil {
		for _, slot := range order {
			keys = append(keys, s.counters[slot])
		}
	}
	lanes := c.order.lanesOf(s.order)
	claim := roundSpec{
		script: scripts.SemaphoreAcquire, keys: keys, args: []string{value, one.ttlArg, s.limitArg},
		timeout: one.nodeTimeout, yes: func(r result) bool { return r.Err == nil },
		every: true, learn: true, lanes: lanes,
	}
	start := time.Now()
	results := c.round(ctx, claim)
	validity := quorum.Validity(one.ttl, time.Since(start), one.drift)
	o := s.outcomes(results, order)
	if err := c.sameServer(); err != nil {
		trace.attemptDone(start, value, o.votes, validity, false)
		s.releaseClaims(ctx, one, value, lanes, results, o, -1)
		return nil, err
	}
	all := one
	all.keys = s.keys[:s.limit]
	crossSlot := c.crossSlot(all, o.errs)
	granted := crossSlot == nil && o.stored == "" && quorum.Granted(o.granted, len(c.nodes), validity)
	var token uint64
	if granted && s.counters != nil {
		token, validity, o.votes = s.fence(ctx, one, value, lanes, start, o)
		granted = quorum.Granted(o.granted, len(c.nodes), validity)
	}
	trace.attemptDone(start, value, o.votes, validity, granted)
	if granted {
		s.releaseClaims(ctx, one, value, lanes, results, o, o.best)
		slot := one
		slot.names, slot.keys = s.slots[o.best:o.best+1:o.best+1], s.keys[o.best:o.best+1:o.best+1]
		slot.fenced = nil // of slot 0; a permit's later rounds make their own
		l := newLock(c, slot, value, token, start, lanes)
		l.permit = s
		return c.live.add(l), nil
	}
	s.releaseClaims(ctx, one, value, lanes, results, o, -1)
	switch {
	case crossSlot != nil:
		return nil, crossSlot
	case o.stored != "":
		return nil, s.mismatch(o.stored)
	}
	named := one
	named.names = []string{s.name}
	return nil, c.failure(OpLock, named, o.votes, validity)
}

// mismatch returns the error of an attempt that found stored in the limit
// record, naming that limit only when it is one: the record's key may
// hold anything written by something else.
func (s *Semaphore) mismatch(stored string) error {
	if limit, err := strconv.Atoi(stored); err == nil && limit >= 1 && strconv.Itoa(limit) == stored {
		return fmt.Errorf("%w: %s holds limit %d on the nodes, this Semaphore has %d", ErrLimitMismatch, keytext.Quote(s.name), limit, s.limit)
	}
	return fmt.Errorf("%w: %s has a limit record that holds no limit", ErrLimitMismatch, keytext.Quote(s.name))
}
