package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// fence runs the second phase of a fenced permit on the slot o.best, as
// attemptFenced does for a lock: the token is one more than the highest
// counter of that slot among the nodes that claimed it, and it is recorded
// in the slot's counter on the nodes that still hold the slot. It returns
// the token, the validity left after the round and its votes.
func (s *Semaphore) fence(ctx context.Context, one request, value string, lanes *quorum.Lanes, start time.Time, o claims) (uint64, time.Duration, votes) {
	var highest int64
	for i, slot := range o.slot {
		if slot == o.best {
			highest = max(highest, o.counter[i])
		}
	}
	token := highest + 1
	c := s.client
	fence := roundSpec{
		script: scripts.Fence, keys: []string{s.keys[o.best], s.counters[o.best]}, args: []string{value, strconv.FormatInt(token, 10)},
		timeout: one.nodeTimeout, yes: isOne, every: c.cfg.waitEvery, lanes: lanes,
	}
	v := countVotes(c.round(ctx, fence), isOne)
	return uint64(token), quorum.Validity(one.ttl, time.Since(start), one.drift), v
}

// claims is what the nodes answered an attempt.
type claims struct {
	votes       // granted: the nodes that granted best; refused: the others that answered
	slot  []int // the slot each node claimed, -1 when none or unknown
	// counter is the fencing counter of its slot that each node read,
	// with WithFencing.
	counter []int64
	// held marks the nodes that answered and hold no slot of the attempt
	// but slot: those that found every slot held or another limit.
	held   []bool
	best   int    // the slot most nodes claimed, -1 when none
	stored string // the other limit a node holds, "" when none did
}

// outcomes reads the replies of semaphore_acquire.lua, whose slot
// positions are those of order.
func (s *Semaphore) outcomes(results []result, order []int) claims {
	o := claims{slot: make([]int, len(results)), counter: make([]int64, len(results)), held: make([]bool, len(results)), best: -1}
	count := make(map[int]int)
	for i, r := range results {
		o.slot[i] = -1
		switch {
		case r.Err == quorum.ErrPending:
			o.pending++
			continue
		case r.Err != nil:
			o.errs = append(o.errs, &NodeError{Node: i, Err: r.Err})
			continue
		}
		reply := r.Value
		if fenced, ok := reply.([]any); ok && s.counters != nil && len(fenced) == 2 {
			counter, ok := fenced[1].(int64)
			if pos, isPos := fenced[0].(int64); ok && isPos && pos >= 1 && counter >= 0 {
				reply, o.counter[i] = pos, counter
			}
		}
		switch reply := reply.(type) {
		case int64:
			switch {
			case reply >= 1 && reply <= int64(len(order)):
				o.slot[i] = order[reply-1]
				count[o.slot[i]]++
				if o.best < 0 || count[o.slot[i]] > count[o.best] {
					o.best = o.slot[i]
				}
				continue
			case reply == 0:
				o.held[i] = true
				continue
			}
		case []any:
			if stored, ok := limitReply(reply); ok {
				o.held[i], o.stored = true, stored
				continue
			}
		}
		o.errs = append(o.errs, &NodeError{Node: i, Err: fmt.Errorf("unexpected reply %#v", r.Value)})
	}
	for i := range results {
		switch {
		case o.slot[i] >= 0 && o.slot[i] == o.best:
			o.granted++
		case o.slot[i] >= 0 || o.held[i]:
			o.refused++
		}
	}
	return o
}

// limitReply reads the {'limit', stored} reply of semaphore_acquire.lua.
func limitReply(reply []any) (stored string, ok bool) {
	if len(reply) != 2 || reply[0] != "limit" {
		return "", false
	}
	stored, ok = reply[1].(string)
	return stored, ok
}

// releaseClaims releases, on every node, every slot the attempt may hold
// but keep (-1 for none), as cleanup does for a failed Lock attempt. A node
// that answered keep or no slot holds nothing to release; when all did,
// nothing is sent.
func (s *Semaphore) releaseClaims(ctx context.Context, one request, value string, lanes *quorum.Lanes, results []result, o claims, keep int) {
	refused := make([]bool, len(results))
	send := false
	for i := range results {
		refused[i] = o.held[i] || (keep >= 0 && o.slot[i] == keep)
		send = send || !refused[i]
	}
	if !send {
		return
	}
	others := one
	others.names, others.keys = nil, make([]string, 0, s.limit)
	for slot, key := range s.keys[:s.limit] {
		if slot != keep {
			others.keys = append(others.keys, key)
		}
	}
	if len(others.keys) == 0 {
		return
	}
	s.client.cleanup(ctx, others, value, lanes, results, refused)
}

// record returns the key of the semaphore's limit record.
func (s *Semaphore) record() string { return s.keys[s.limit] }

// extendSpec returns the round that extends a permit of s held with value
// on req's slot, and keeps the limit record at least as long.
func (s *Semaphore) extendSpec(req request, value string) roundSpec {
	return roundSpec{
		script: scripts.SemaphoreExtend, keys: []string{req.keys[0], s.record()}, args: []string{value, req.ttlArg, s.limitArg},
		timeout: req.nodeTimeout, yes: isOne, every: s.client.cfg.waitEvery,
	}
}
