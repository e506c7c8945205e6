package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// attempt makes one round of acquire requests with a fresh value.
func (c *Client) attempt(ctx context.Context, req request, trace *lockTrace) (*Lock, error) {
	value, err := c.freshValue()
	if err != nil {
		return nil, err
	}
	if c.cfg.fencing {
		return c.attemptFenced(ctx, req, value, trace, nil)
	}
	lanes := c.order.lanes(req)
	acquire := c.spec(c.cfg.acquire, req, isOne, value, req.ttlArg)
	acquire.lanes, acquire.skip, acquire.learn = lanes, c.skipped(req), true
	start := time.Now()
	results := c.round(ctx, acquire)
	validity := quorum.Validity(req.ttl, time.Since(start), req.drift)
	v := countVotes(results, isOne)
	if err := c.sameServer(); err != nil {
		trace.attemptDone(start, value, v, validity, false)
		c.cleanup(ctx, req, value, lanes, results, refusedBy(results, isOne))
		return nil, err
	}
	crossSlot := c.crossSlot(req, v.errs)
	granted := crossSlot == nil && quorum.Granted(v.granted, len(c.nodes), validity)
	trace.attemptDone(start, value, v, validity, granted)
	if granted {
		return c.live.add(newLock(c, req, value, 0, start, lanes)), nil
	}
	c.cleanup(ctx, req, value, lanes, results, refusedBy(results, isOne))
	if crossSlot != nil {
		return nil, crossSlot
	}
	return nil, c.failure(OpLock, req, v, validity)
}

// freshValue draws the value of a new attempt.
func (c *Client) freshValue() (string, error) {
	value, err := c.cfg.newValue()
	if err != nil {
		return "", fmt.Errorf("redlock: generating a lock value: %w", err)
	}
	if value == "" {
		return "", fmt.Errorf("redlock: the value generator returned an empty value")
	}
	return value, nil
}

// cleanup releases a failed attempt's keys on every node, whatever each
// answered: a node that refused may still hold them, set by an earlier run
// of the same request that a Redis client re-sent, and the release is
// value-checked, so it never touches another owner's key. Each release
// follows the attempt's request on its node (lanes), so that a grant
// arriving late is released too.
//
// A release that fails on a node that may hold the keys, one not among
// those that refused the attempt (refused, see refusedBy), is sent again
// (releaseAgain), unless the node is failing or refused it as a CROSSSLOT
// mistake, which nothing set. Keys left behind would refuse every lock on
// them, this Client's next attempt included, for the rest of the TTL;
// under contention, on nodes whose faults come and go, each attempt
// failing on them would leave more.
//
// cleanup returns once the nodes that had answered the attempt (in
// results, not with a node timeout) have answered the release, sent again
// where it failed, and the others' releases go on in the background. A
// release sent again is thus no straggler, which would make its node look
// behind (see skipped), and the node's failures are counted by the time
// the attempt returns. It is detached from ctx's cancellation so that a
// caller giving up leaves nothing behind.
func (c *Client) cleanup(ctx context.Context, req request, value string, lanes *quorum.Lanes, results []result, refused []bool) {
	c.cleanupWith(ctx, c.spec(c.cfg.release, req, nil, value), lanes, results, refused)
}

// cleanupWith is cleanup with the release round release, for a lock whose
// keys a script of its own releases (an election's).
func (c *Client) cleanupWith(ctx context.Context, release roundSpec, lanes *quorum.Lanes, results []result, refused []bool) {
	release.yes, release.every, release.lanes = nil, false, lanes
	release.wait = make([]bool, len(results))
	for i, r := range results {
		// A node that did not answer within the node timeout, whether the
		// round or its call ended first, is not waited for again.
		release.wait[i] = r.Err != quorum.ErrPending && !errors.Is(r.Err, ErrNodeTimeout)
	}
	release.again = func(i int, err error) bool {
		return !refused[i] && !c.fails.failed(i) && !isCrossSlot(err)
	}
	c.round(detached(ctx), release)
}

// refusedBy returns the nodes that refused a round: those whose reply is a
// number that granted says is no grant, as countVotes counts them. They do
// not hold its keys, unless a Redis client re-sent an earlier request of
// the same value. A node that failed, answered something else or had not
// answered when the round returned may hold them.
func refusedBy(results []result, granted func(result) bool) []bool {
	refused := make([]bool, len(results))
	for i, r := range results {
		_, number := r.Value.(int64)
		refused[i] = r.Err == nil && number && !granted(r)
	}
	return refused
}

// releaseRetries is how many times a failed release is sent again, and
// releaseRetryPause the pause before the first of them; each later pause
// doubles the one before. A node whose fault lasts longer than these few
// milliseconds keeps the keys until they expire. A release is not sent
// again to a node whose last requests all failed (nodeFailures.failed),
// one that refuses connections say: it would fail again.
const (
	releaseRetries    = 3
	releaseRetryPause = time.Millisecond
)

// releaseAgain sends a release that failed with err again, up to
// releaseRetries times after pauses that start at releaseRetryPause and
// double, until it is answered or ctx, the node's call context, ends. It
// returns the last try's reply and error. Sending a release again is safe
// whatever the failed try did on the node, since a release deletes only
// keys that hold the attempt's value.
func releaseAgain(ctx context.Context, run func() (any, error), err error) (any, error) {
	var reply any
	pause := releaseRetryPause
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for try := 0; err != nil && try < releaseRetries; try++ {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return reply, err
		}
		reply, err = run()
		pause *= 2
		timer.Reset(pause)
	}
	return reply, err
}
