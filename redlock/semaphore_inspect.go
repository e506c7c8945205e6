package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// SemaphoreInspection is the state of a semaphore on every node, as read
// by [Semaphore.Inspect].
type SemaphoreInspection struct {
	// Name and Limit are those of the Semaphore that inspected.
	Name  string
	Limit int
	// Slots holds one Inspection per slot, in slot order, each as
	// [Client.Inspect] reads a lock but for the fencing counters, which
	// are not read; its Key is the slot's name. A slot whose Held is set
	// is a live permit, valid until HeldUntil at the latest.
	Slots []Inspection
	// Held counts the live permits: the slots with Held set.
	Held int
	// Limits holds the limit recorded on each node, in the order given to
	// [New]: 0 where there is no record or the node failed (its error is
	// in the NodeState of every slot).
	Limits []int
}

// Inspect reads the semaphore's slots and limit record on every node, in
// one request per node, and reports the live permits. Like
// [Client.Inspect] it only reads, each node is bounded by the timeout of
// [WithNodeTimeout] or 1 s without it, and it returns an error only for a
// bad argument and after Close.
func (s *Semaphore) Inspect(ctx context.Context) (*SemaphoreInspection, error) {
	if err := s.check("Inspect"); err != nil {
		return nil, err
	}
	c := s.client
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.calls.Done()
	timeout := defaultNodeTimeoutMax
	if c.cfg.nodeTimeoutSet {
		timeout = c.cfg.nodeTimeout
	}
	n := len(c.nodes)
	in := &SemaphoreInspection{Name: s.name, Limit: s.limit, Slots: make([]Inspection, s.limit), Limits: make([]int, n)}
	for i := range in.Slots {
		in.Slots[i] = Inspection{Key: s.slots[i], Nodes: make([]NodeState, n), Quorum: quorum.Size(n)}
	}
	replies := c.readEvery(ctx, timeout, scripts.SemaphoreInspect, s.keys, func(reply any, at time.Time) (any, error) {
		return s.parseInspectReply(reply, at)
	})
	for i, r := range replies {
		var failed error
		switch {
		case r.Err == quorum.ErrPending && ctx.Err() == nil:
			failed = c.timeoutError(i, timeout, r.Err)
		case r.Err == quorum.ErrPending:
			failed = ctx.Err()
		case r.Err != nil:
			failed = r.Err
		}
		if failed != nil {
			for slot := range in.Slots {
				in.Slots[slot].Nodes[i] = NodeState{Err: failed}
			}
			continue
		}
		node := r.Value.(semaphoreNode)
		for slot := range in.Slots {
			in.Slots[slot].Nodes[i] = node.slots[slot]
		}
		in.Limits[i] = node.limit
	}
	for i := range in.Slots {
		slot := &in.Slots[i]
		slot.Value, slot.HeldUntil, slot.Held = quorumHolder(slot.Nodes, slot.Quorum)
		if slot.Held {
			in.Held++
		}
	}
	return in, nil
}

// semaphoreNode is what one node holds for a semaphore.
type semaphoreNode struct {
	slots []NodeState
	limit int // 0 without a record
}

// parseInspectReply reads the reply of semaphore_inspect.lua, read at now.
func (s *Semaphore) parseInspectReply(reply any, now time.Time) (semaphoreNode, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 1+3*s.limit {
		return semaphoreNode{}, fmt.Errorf("unexpected reply of %d items", len(r))
	}
	limit := 0
	if v, ok := r[0].(string); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return semaphoreNode{}, fmt.Errorf("the limit record is not a number")
		}
		limit = n
	}
	states := make([]NodeState, s.limit)
	for i := range states {
		state, err := parseInspectReply([]any{r[1+3*i], r[2+3*i], r[3+3*i], nil})
		if err != nil {
			return semaphoreNode{}, err
		}
		state.ReadAt = now
		states[i] = state
	}
	return semaphoreNode{slots: states, limit: limit}, nil
}
