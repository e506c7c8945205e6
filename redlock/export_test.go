package redlock

import (
	"context"
	"time"
)

// Waiting returns how many Lock calls of c wait in the queue of key, so
// that tests can order waiters without sleeping.
func Waiting(c *Client, key string) int {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	if kw, ok := c.waits.keys[key]; ok {
		return len(kw.queue)
	}
	return 0
}

// ArmedLossDeadline returns the deadline that the loss timer of the
// KeepAlive that returned ctx is armed for. ok is false for any other
// context and once that renewal has ended.
func ArmedLossDeadline(ctx context.Context) (deadline time.Time, ok bool) {
	hc, _ := ctx.(*heldContext)
	if hc == nil || hc.r == nil {
		return time.Time{}, false
	}
	l := hc.lock
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewal != hc.r {
		return time.Time{}, false
	}
	return hc.r.armed, true
}

// NodeTimeout returns the per-node timeout c uses for a lock of ttl.
func NodeTimeout(c *Client, ttl time.Duration) (time.Duration, error) {
	req, err := c.newRequest([]string{"k"}, ttl)
	return req.nodeTimeout, err
}

// WaitForEveryNode makes every round of the Client wait for the reply of
// every node, as rounds did before they returned once decided: for tests
// that count the votes of every node.
func WaitForEveryNode() Option {
	return optionFunc(func(c *config) { c.waitEvery = true })
}

// SetHealthClock makes c measure how long its nodes' requests outlive
// their rounds, and when a failing node is due a probe, with now instead
// of time.Now. Call it before c's first round.
func SetHealthClock(c *Client, now func() time.Time) { c.health.Now, c.fails.now = now, now }

// SkipNodes makes every acquire of the Client skip the nodes of skip, as
// if they were behind or failing: for tests of what such a lock does next.
func SkipNodes(skip []bool) Option {
	return optionFunc(func(c *config) { c.skipAlways = skip })
}

// Stragglers returns how many requests of node are still running after
// their rounds returned.
func Stragglers(c *Client, node int) int { return c.health.Stragglers(node) }
