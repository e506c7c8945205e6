package redsync

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// A request asks one node for something and reports whether it agreed.
// (false, nil) means the node answered no: the key holds another owner's
// value.
type request func(ctx context.Context, node *scripts.Node) (bool, error)

// vote is one node's answer in a round.
type vote struct {
	node int
	yes  bool
	err  error
}

// tally counts the votes of a round into the result redsync reports.
type tally struct {
	yes   int
	taken []int
	err   error
}

func (t *tally) add(v vote) {
	switch {
	case v.yes:
		t.yes++
	case v.err == ErrLockAlreadyExpired:
		t.err = errors.Join(t.err, ErrLockAlreadyExpired)
	case v.err != nil:
		t.err = errors.Join(t.err, &RedisError{Node: v.node, Err: v.err})
	default:
		t.taken = append(t.taken, v.node)
		t.err = errors.Join(t.err, &ErrNodeTaken{Node: v.node})
	}
}

// result returns the number of nodes that agreed and the error of the
// round: a *ErrTaken when a quorum refused, otherwise the joined errors of
// the nodes that did not agree (nil when all agreed).
func (t *tally) result(q int) (int, error) {
	if len(t.taken) >= q {
		return t.yes, &ErrTaken{Nodes: t.taken}
	}
	return t.yes, t.err
}

// round sends req to every node at once, each bounded by timeout, and
// returns tally.result. It waits for every node, unless WithFailFast is set:
// then it returns as soon as a quorum agreed or can no longer agree (the
// rule redlock's rounds follow), and the requests still running finish in
// the background within timeout.
func (m *Mutex) round(ctx context.Context, timeout time.Duration, req request) (int, error) {
	var t tally
	if !m.failFast {
		votes := make([]vote, len(m.nodes))
		fanOut(ctx, len(m.nodes), timeout, func(ctx context.Context, i int) {
			yes, err := req(ctx, m.nodes[i])
			votes[i] = vote{node: i, yes: yes, err: err}
		})
		for _, v := range votes {
			t.add(v)
		}
		return t.result(m.quorum)
	}

	r := quorum.Round{
		Nodes:   len(m.nodes),
		Timeout: timeout,
		Call: func(ctx context.Context, i int) quorum.Reply {
			yes, err := req(ctx, m.nodes[i])
			return quorum.Reply{Value: yes, Err: err}
		},
		Yes: func(r quorum.Reply) bool { return r.Err == nil && r.Value == true },
	}
	replies := r.Run(ctx)
	// A node that had not answered is left out when the others decided the
	// round; when the round ended at its timeout or with ctx, it failed
	// with that.
	yes, no := 0, 0
	for _, reply := range replies {
		switch {
		case errors.Is(reply.Err, quorum.ErrPending):
		case r.Yes(reply):
			yes++
		default:
			no++
		}
	}
	decided := quorum.Decided(len(m.nodes), yes, no)
	for i, reply := range replies {
		v := vote{node: i, err: reply.Err}
		if errors.Is(reply.Err, quorum.ErrPending) {
			if decided {
				continue
			}
			v.err = ctx.Err()
			if v.err == nil {
				v.err = context.DeadlineExceeded
			}
		}
		v.yes, _ = reply.Value.(bool)
		t.add(v)
	}
	return t.result(m.quorum)
}

// fanOut calls request once for every node index in [0, n), all at once,
// and returns when every call has returned. Each call gets a context that
// is done when ctx is done or timeout has passed since fanOut started.
func fanOut(ctx context.Context, n int, timeout time.Duration, request func(ctx context.Context, node int)) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	for node := range n {
		wg.Go(func() { request(ctx, node) })
	}
	wg.Wait()
}
