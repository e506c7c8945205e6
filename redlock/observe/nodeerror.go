package observe

import "fmt"

// NodeError is the failure of one node in a round of requests. Package
// redlock names it redlock.NodeError (an alias: the same type), in the
// Errors of its QuorumError as in those of [RoundInfo].
type NodeError struct {
	// Node is the index of the node in the slice given to redlock.New.
	Node int
	// Err is what went wrong: the driver's error, redlock.ErrNodeTimeout,
	// or an unexpected reply.
	Err error
}

// Error returns "node N: " and the node's error.
func (e *NodeError) Error() string {
	return fmt.Sprintf("node %d: %v", e.Node, e.Err)
}

// Unwrap returns e.Err.
func (e *NodeError) Unwrap() error { return e.Err }
