package redlock

import (
	"errors"
	"fmt"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// votes is the count of a round's answers.
type votes struct {
	granted, refused int
	pending          int // nodes that had not answered when the round was decided
	errs             []*NodeError
}

// uncertain reports whether the outcome of the round's request is unknown
// on some node: one had not answered, or failed in a way that leaves open
// whether the request was applied. A request that was never sent is not
// one of them.
func (v votes) uncertain() bool {
	return v.pending > 0 || len(v.errs) > unsent(v.errs)
}

// unsent counts the nodes of errs that the request was not sent to
// (ErrNodeSkipped): they cannot hold the lock, like the nodes that refused.
func unsent(errs []*NodeError) int {
	n := 0
	for _, ne := range errs {
		if errors.Is(ne.Err, ErrNodeSkipped) {
			n++
		}
	}
	return n
}

// eventErrors returns the node errors of the round as a RoundInfo lists them.
func (v votes) eventErrors() []error {
	if len(v.errs) == 0 {
		return nil
	}
	errs := make([]error, len(v.errs))
	for i, ne := range v.errs {
		errs[i] = ne
	}
	return errs
}

// countVotes counts a round's answers. granted tells whether a reply is a
// yes; any other integer is a refusal and anything else a node error.
func countVotes(results []result, granted func(result) bool) votes {
	var v votes
	for i, r := range results {
		switch {
		case r.Err == quorum.ErrPending:
			v.pending++
		case r.Err != nil:
			v.errs = append(v.errs, &NodeError{Node: i, Err: r.Err})
		case granted(r):
			v.granted++
		default:
			if _, ok := r.Value.(int64); ok {
				v.refused++
			} else {
				v.errs = append(v.errs, &NodeError{Node: i, Err: fmt.Errorf("unexpected reply %#v", r.Value)})
			}
		}
	}
	return v
}

// failure describes a round that did not grant what op asked for.
func (c *Client) failure(op Op, req request, v votes, validity time.Duration) *QuorumError {
	return &QuorumError{
		Op:       op,
		Keys:     req.names,
		Nodes:    len(c.nodes),
		Quorum:   quorum.Size(len(c.nodes)),
		Granted:  v.granted,
		Refused:  v.refused,
		Validity: validity,
		Errors:   v.errs,
	}
}

// isOne reports whether a reply is the integer 1, most scripts' yes. Like
// every vote of a round (roundSpec.yes), it is false for a node error.
func isOne(r result) bool { return r.Err == nil && r.Value == int64(1) }
