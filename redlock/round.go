package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// result is one node's answer in a round.
type result = quorum.Reply

// roundSpec is what a round asks of the nodes: one script with its keys
// and arguments, sent to every node at once.
type roundSpec struct {
	script  *scripts.Script
	keys    []string
	args    []string
	timeout time.Duration // per node
	// yes reports whether a reply votes for the outcome the round asks
	// for; a node error never does. A round without yes counts no votes:
	// it returns once the nodes of wait have answered (a cleanup).
	yes  func(result) bool
	wait []bool
	// every makes the round wait for the reply of every node, whatever
	// the votes (see request.every).
	every bool
	// learn makes the round wait for the nodes whose server ID is still to
	// learn (see unknownServers), for sameServer to compare after it.
	learn bool
	// lanes orders the request on each node after the earlier requests of
	// the same lanes; skip names the nodes it is not sent to (see skipped).
	lanes *quorum.Lanes
	skip  []bool
	// again, when not nil, reports whether a request that failed on node
	// with err is sent again (see releaseAgain).
	again func(node int, err error) bool
}

// spec returns the round that runs s with req's keys and the given
// arguments, followed by the extra keys and arguments when s is custom.
func (c *Client) spec(s scriptUse, req request, yes func(result) bool, args ...string) roundSpec {
	keys := req.keys
	if s.custom {
		if req.extra != nil {
			keys = append(keys[:len(keys):len(keys)], *req.extra...)
		}
		args = append(args, c.cfg.scripts.ExtraArgs...)
	}
	return roundSpec{script: s.script, keys: keys, args: args, timeout: req.nodeTimeout, yes: yes, every: req.every || c.cfg.waitEvery}
}

// round runs s on every node at once, each bounded by the per-node
// timeout, after the earlier requests of s.lanes on that node, except on
// the nodes of s.skip and those whose lane carries no request (their reply
// is a *skipError). It returns as soon as s.yes holds for a quorum of
// the replies or can no longer hold for one, unless s says to wait longer;
// a node that had not answered by then has quorum.ErrPending, or a
// *nodeTimeoutError when the round ended at the per-node timeout.
func (c *Client) round(ctx context.Context, s roundSpec) []result {
	// The calls read copies of what they need, held in their closure,
	// which is allocated anyway: reading s itself would move all of it to
	// the heap, as it is too large for a closure to copy.
	script, keys, args, again, timeout := s.script, s.keys, s.args, s.again, s.timeout
	run := &quorum.Round{
		Nodes:    len(c.nodes),
		Timeout:  s.timeout,
		Yes:      s.yes,
		Wait:     s.wait,
		Lanes:    s.lanes,
		Skip:     s.skip,
		Health:   c.health,
		Outcomes: &c.fails,
		Tracker:  &c.requests,
		Inline:   c.inline,
		Call: func(nodeCtx context.Context, i int) result {
			send := func() (any, error) { return c.nodes[i].Run(nodeCtx, script, keys, args) }
			reply, err := send()
			if err != nil && again != nil && again(i, err) {
				reply, err = releaseAgain(nodeCtx, send, err)
			}
			if err != nil && ctx.Err() == nil && timedOut(nodeCtx) {
				err = c.timeoutError(i, timeout, err)
			}
			return result{Value: reply, Err: err}
		},
	}
	switch {
	case s.every:
		run.Wait = c.everyNode
	case s.learn:
		run.Wait = c.unknownServers()
	}
	start := time.Now()
	results := run.Run(ctx)
	timedOut := ctx.Err() == nil && time.Since(start) >= s.timeout
	for i, r := range results {
		switch {
		case r.Err == quorum.ErrNotSent:
			results[i].Err = c.skipError(i, i < len(s.skip) && s.skip[i])
		case r.Err == quorum.ErrPending && timedOut:
			results[i].Err = c.timeoutError(i, s.timeout, r.Err)
		}
	}
	return results
}

// timedOut reports whether a node's context has reached its deadline. A
// client that turns the deadline into a socket timeout can fail a moment
// before the context itself reports it, so the clock is checked too.
func timedOut(nodeCtx context.Context) bool {
	if errors.Is(nodeCtx.Err(), context.DeadlineExceeded) {
		return true
	}
	deadline, ok := nodeCtx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// detached returns ctx without its cancellation, for a round that runs to
// the end whatever the caller does. A ctx that can never be cancelled
// (context.Background, say) is returned as it is, which saves an allocation.
func detached(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
