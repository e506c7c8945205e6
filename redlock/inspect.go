package redlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// Inspection is the state of one resource on every node, as read by
// [Client.Inspect].
type Inspection struct {
	// Key is the resource name, as given.
	Key string
	// Nodes holds one entry per node, in the order given to [New].
	Nodes []NodeState
	// Quorum is how many nodes must hold a value for it to be a lock.
	Quorum int
	// Held reports whether at least Quorum nodes hold the same Value.
	Held bool
	// Value is the value held by at least Quorum nodes, or "". It proves
	// ownership: show no more than a short prefix of it.
	Value string
	// HeldUntil is, when Held, the latest time until which a quorum of
	// nodes may still hold Value, on the local clock: the end of the
	// Quorum-th longest remaining TTL among the nodes holding it. It is
	// zero when not Held, or when too many of those keys have no expiry
	// for the lock ever to run out.
	HeldUntil time.Time
}

// NodeState is what one node holds for a resource.
type NodeState struct {
	// Exists reports whether the node has the lock key, of any type. A key
	// that exists keeps any owner from acquiring the lock on this node.
	Exists bool
	// Type is the Redis type of the lock key ("string" for a lock), or ""
	// when it does not exist.
	Type string
	// Value is the lock key's value when it is a string. It proves
	// ownership: show no more than a short prefix of it.
	Value string
	// TTL is the lock key's remaining time to live, or 0 when it does not
	// exist or has no expiry.
	TTL time.Duration
	// NoExpiry reports a lock key that exists without an expiry, which no
	// lock leaves behind.
	NoExpiry bool
	// Counter is the resource's fencing counter on this node (see
	// [WithFencing]), or 0 when it has none.
	Counter uint64
	// ReadAt is when the node's reply arrived, on the local clock.
	ReadAt time.Time
	// Err is the node's failure; the other fields are then zero.
	Err error
}

// Inspect reads the state of the resource key on every node: whether its
// lock key exists, its value, its remaining TTL and its fencing counter (see
// [WithFencing]), and reports whether a quorum holds one value and until
// when at the latest. The key prefix of [WithKeyPrefix] applies as it does
// for [Client.Lock].
//
// Inspect only reads: it never creates, changes, extends or deletes a key,
// so it may run at any time next to the locks of any Client. Its answer is a
// snapshot, out of date as soon as it returns.
//
// Each node is bounded by the timeout of [WithNodeTimeout], or 1 s without
// it. A node that fails has its error in
// [NodeState.Err]; Inspect itself returns an error only for a nil ctx or
// an empty key (matching [ErrInvalidArgument]) and after Close
// (ErrClosed).
func (c *Client) Inspect(ctx context.Context, key string) (*Inspection, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	if key == "" {
		return nil, invalidf("empty key")
	}
	lockKey := c.cfg.keyPrefix + key
	keys := []string{lockKey}
	if counter, err := fenceKey(lockKey); err == nil {
		keys = append(keys, counter)
	}
	timeout := defaultNodeTimeoutMax
	if c.cfg.nodeTimeoutSet {
		timeout = c.cfg.nodeTimeout
	}
	in := &Inspection{Key: key, Nodes: make([]NodeState, len(c.nodes)), Quorum: quorum.Size(len(c.nodes))}
	replies := c.readEvery(ctx, timeout, scripts.Inspect, keys, func(reply any, at time.Time) (any, error) {
		s, err := parseInspectReply(reply)
		s.ReadAt = at
		return s, err
	})
	for i, r := range replies {
		switch {
		case r.Err == quorum.ErrPending && ctx.Err() == nil:
			in.Nodes[i] = NodeState{Err: c.timeoutError(i, timeout, r.Err)}
		case r.Err == quorum.ErrPending:
			in.Nodes[i] = NodeState{Err: ctx.Err()}
		case r.Err != nil:
			in.Nodes[i] = NodeState{Err: r.Err}
		default:
			in.Nodes[i] = r.Value.(NodeState)
		}
	}
	in.Value, in.HeldUntil, in.Held = quorumHolder(in.Nodes, in.Quorum)
	return in, nil
}

// parseInspectReply reads the reply of inspect.lua:
// {type, value or nil, pttl, counter or nil}.
func parseInspectReply(reply any) (NodeState, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 4 {
		return NodeState{}, fmt.Errorf("unexpected reply %#v", reply)
	}
	kind, ok1 := r[0].(string)
	pttl, ok2 := r[2].(int64)
	if !ok1 || !ok2 {
		return NodeState{}, fmt.Errorf("unexpected reply %#v", reply)
	}
	var s NodeState
	if kind != "none" {
		s.Exists, s.Type = true, kind
	}
	if v, ok := r[1].(string); ok {
		s.Value = v
	}
	switch {
	case pttl > 0:
		s.TTL = time.Duration(pttl) * time.Millisecond
	case pttl == -1:
		s.NoExpiry = true
	}
	if c, ok := r[3].(string); ok {
		n, err := strconv.ParseUint(c, 10, 64)
		if err != nil {
			return NodeState{}, fmt.Errorf("fencing counter is not a number")
		}
		s.Counter = n
	}
	return s, nil
}

// quorumHolder returns the value that at least q nodes hold and the latest
// time a quorum of them may still hold it.
func quorumHolder(nodes []NodeState, q int) (value string, until time.Time, held bool) {
	counts := make(map[string]int)
	for _, s := range nodes {
		if s.Err == nil && s.Value != "" {
			counts[s.Value]++
		}
	}
	for v, n := range counts {
		if n >= q {
			value = v
		}
	}
	if value == "" {
		return "", time.Time{}, false
	}
	var ends []time.Time // zero for a key without expiry
	for _, s := range nodes {
		if s.Err == nil && s.Value == value {
			end := time.Time{}
			if !s.NoExpiry {
				// PTTL rounds down to whole milliseconds.
				end = s.ReadAt.Add(s.TTL + time.Millisecond)
			}
			ends = append(ends, end)
		}
	}
	// Latest first, keys without expiry before all others.
	slices.SortFunc(ends, func(a, b time.Time) int {
		switch {
		case a.Equal(b):
			return 0
		case a.IsZero() || (!b.IsZero() && a.After(b)):
			return -1
		default:
			return 1
		}
	})
	return value, ends[q-1], true
}

// ValuePrefix returns the part of s.Value that may be shown, as the
// Value fields of [observe.Observer] events show it: its first few characters, or
// "" for a value too short to give any of it away.
func (s NodeState) ValuePrefix() string { return valuePrefix(s.Value) }

// ValuePrefix returns the part of in.Value that may be shown, as
// [NodeState.ValuePrefix] does.
func (in *Inspection) ValuePrefix() string { return valuePrefix(in.Value) }

// readEvery runs script with keys on every node at once, each bounded by
// timeout, and returns each node's reply as parse reads it, given the
// time the reply arrived: the read round of Inspect, Semaphore.Inspect
// and Election.Leader.
func (c *Client) readEvery(ctx context.Context, timeout time.Duration, script *scripts.Script, keys []string, parse func(reply any, at time.Time) (any, error)) []quorum.Reply {
	round := quorum.Round{
		Nodes:   len(c.nodes),
		Timeout: timeout,
		Tracker: &c.requests,
		Inline:  c.inline,
		Call: func(ctx context.Context, i int) quorum.Reply {
			reply, err := c.nodes[i].Run(ctx, script, keys, nil)
			at := time.Now()
			if err != nil {
				return quorum.Reply{Err: err}
			}
			v, err := parse(reply, at)
			return quorum.Reply{Value: v, Err: err}
		},
	}
	return round.Run(ctx)
}
