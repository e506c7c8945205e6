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
	// for. A round without yes counts no votes: it returns once the nodes
	// of wait have answered (a cleanup).
	yes  func(reply any) bool
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
func (c *Client) spec(s scriptUse, req request, yes func(any) bool, args ...string) roundSpec {
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
// is ErrNodeSkipped). It returns as soon as s.yes holds for a quorum of
// the replies or can no longer hold for one, unless s says to wait longer;
// a node that had not answered by then has quorum.ErrPending, wrapped in
// a *nodeTimeoutError when the round ended at the per-node timeout.
func (c *Client) round(ctx context.Context, s roundSpec) []result {
	// The spec and the quorum.Round live in one allocation, which the
	// calls share.
	run := &specRound{spec: s}
	run.Round = quorum.Round{
		Nodes:   len(c.nodes),
		Timeout: s.timeout,
		Every:   s.every,
		Wait:    s.wait,
		Lanes:   s.lanes,
		Skip:    s.skip,
		Health:  c.health,
		Tracker: &c.requests,
		Inline:  c.inline,
		Call: func(nodeCtx context.Context, i int) result {
			spec := &run.spec
			send := func() (any, error) { return c.nodes[i].Run(nodeCtx, spec.script, spec.keys, spec.args) }
			reply, err := send()
			if err != nil && spec.again != nil && spec.again(i, err) {
				reply, err = releaseAgain(nodeCtx, send, err)
			}
			if err != nil && ctx.Err() == nil && timedOut(nodeCtx) {
				err = &nodeTimeoutError{timeout: spec.timeout, driverErr: err}
			}
			return result{Value: reply, Err: err}
		},
	}
	if s.yes != nil {
		run.Yes = run.yes
	}
	if s.learn {
		run.Wait = c.unknownServers()
	}
	start := time.Now()
	results := run.Run(ctx)
	timedOut := ctx.Err() == nil && time.Since(start) >= s.timeout
	for i, r := range results {
		switch {
		case r.Err == quorum.ErrNotSent:
			results[i].Err = ErrNodeSkipped
		case r.Err == quorum.ErrPending && timedOut:
			results[i].Err = &nodeTimeoutError{timeout: s.timeout, driverErr: r.Err}
		}
	}
	return results
}

// specRound is a round run from a roundSpec.
type specRound struct {
	spec roundSpec
	quorum.Round
}

// yes is the round's Yes: a reply votes for the outcome when it is no
// error and the spec's yes holds for it.
func (r *specRound) yes(reply result) bool { return reply.Err == nil && r.spec.yes(reply.Value) }

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
