package redlock

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// fenceSuffix names a resource's fencing counter. Lock keys ending in it
// are refused by newRequest, with or without fencing, so that no lock key
// is ever a counter.
const fenceSuffix = ":fencing-token"

// fenceKey returns the key of the fencing counter of the lock key key. It
// lies in the same Redis Cluster hash slot as key: after key's own hash tag
// when it has one, otherwise in a hash tag made of the whole key. A key
// with no hash tag that contains '}' cannot be wrapped in one.
func fenceKey(key string) (string, error) {
	if !scripts.HasHashTag(key) && strings.IndexByte(key, '}') >= 0 {
		return "", invalidf("fenced key %s has no hash tag and contains '}', so no counter key can share its hash slot; give it a hash tag such as %s",
			keytext.Quote(key), keytext.Quote("{"+strings.ReplaceAll(key, "}", "")+"}"))
	}
	return scripts.SameSlot(key, fenceSuffix), nil
}

// fencedKeys returns the lock keys followed by their counters, as the
// fenced scripts take them.
func fencedKeys(keys []string) ([]string, error) {
	all := make([]string, 0, 2*len(keys))
	all = append(all, keys...)
	for _, k := range keys {
		f, err := fenceKey(k)
		if err != nil {
			return nil, err
		}
		all = append(all, f)
	}
	return all, nil
}

// attemptFenced makes one fenced acquisition, the two rounds of a quorum
// max-register. Phase 1 sets the lock keys and reads the counters; the
// token is one more than the highest counter among the nodes that granted.
// Phase 2 raises the counters to the token on the nodes that still hold the
// lock. The token is handed out only when both phases reach a quorum within
// the validity of phase 1's start.
//
// For a candidate of an election, phase 2 also publishes its record, and
// a failed attempt's keys are released with the election's script; the
// Lock is a leadership.
func (c *Client) attemptFenced(ctx context.Context, req request, value string, trace *lockTrace, cd *candidate) (*Lock, error) {
	n := len(c.nodes)
	fenced := request{names: req.names, keys: req.fenced, nodeTimeout: req.nodeTimeout, every: req.every}
	lanes := c.order.lanes(req)
	acquire := c.spec(scriptUse{script: scripts.FencedAcquire}, fenced, isFencedGrant, value, req.ttlArg)
	acquire.lanes, acquire.skip, acquire.learn = lanes, c.skipped(req), true
	cleanup := func(results []result, refused []bool) {
		if cd != nil {
			c.cleanupWith(ctx, cd.election.releaseSpec(req, value, nil), lanes, results, refused)
			return
		}
		c.cleanup(ctx, req, value, lanes, results, refused)
	}
	start := time.Now()
	phase1 := c.round(ctx, acquire)
	v := countVotes(phase1, isFencedGrant)
	validity := quorum.Validity(req.ttl, time.Since(start), req.drift)
	if err := c.sameServer(); err != nil {
		trace.attemptDone(start, value, v, validity, false)
		cleanup(phase1, refusedBy(phase1, isFencedGrant))
		return nil, err
	}
	if err := c.crossSlot(req, v.errs); err != nil || !quorum.Granted(v.granted, n, validity) {
		trace.attemptDone(start, value, v, validity, false)
		cleanup(phase1, refusedBy(phase1, isFencedGrant))
		if err != nil {
			return nil, err
		}
		return nil, c.failure(OpLock, req, v, validity)
	}
	var highest int64
	for _, r := range phase1 {
		if isFencedGrant(r) {
			highest = max(highest, r.Value.([]any)[1].(int64))
		}
	}
	token := highest + 1

	fence := c.spec(scriptUse{script: scripts.Fence}, fenced, isOne, value, strconv.FormatInt(token, 10))
	if cd != nil {
		fence = cd.fenceSpec(req, value, token)
	}
	fence.lanes = lanes
	phase2 := c.round(ctx, fence)
	v = countVotes(phase2, isOne)
	validity = quorum.Validity(req.ttl, time.Since(start), req.drift)
	granted := quorum.Granted(v.granted, n, validity)
	trace.attemptDone(start, value, v, validity, granted)
	if !granted {
		// The nodes that refused phase 1 do not hold the keys. One that
		// refused phase 2 may hold some of several: it refuses when any
		// one no longer holds the value.
		cleanup(phase2, refusedBy(phase1, isFencedGrant))
		return nil, c.failure(OpLock, req, v, validity)
	}
	l := newLock(c, req, value, uint64(token), start, lanes)
	if cd != nil {
		l.elected = cd.election
	}
	return c.live.add(l), nil
}

// isFencedGrant reports whether a phase-1 reply grants the lock: {1, n}
// with n the node's highest counter.
func isFencedGrant(r result) bool {
	reply, ok := r.Value.([]any)
	if r.Err != nil || !ok || len(reply) != 2 || reply[0] != int64(1) {
		return false
	}
	counter, ok := reply[1].(int64)
	return ok && counter >= 0
}
