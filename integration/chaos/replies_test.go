package chaos

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// Two faults come from the client side rather than from a server or the
// network: a client library that re-sends a command whose connection broke
// after it was written has the request applied twice, and a connection that
// breaks once the request was applied leaves the caller with an error for a
// request that took effect. A replyConn in front of each node's adapter Conn
// injects them, so they reach every adapter alike.

// replyFault is what a replyConn does to the calls of its node.
type replyFault int32

const (
	repliesIntact replyFault = iota
	appliedTwice             // run each call twice, return the second reply
	replyLost                // run each call, return errReplyLost
)

// replySwitch holds the reply fault active on one node; the injector sets
// it while every client's replyConn of that node reads it.
type replySwitch struct{ fault atomic.Int32 }

func (s *replySwitch) set(f replyFault) { s.fault.Store(int32(f)) }
func (s *replySwitch) get() replyFault  { return replyFault(s.fault.Load()) }

// errReplyLost is the error of a call whose reply the fault dropped.
var errReplyLost = errors.New("chaos: connection lost after the request was applied")

// replyConn is a node's adapter Conn with the reply faults of its switch.
// Pub/sub (Subscribe) and the node's identity pass through untouched.
type replyConn struct {
	conn     driver.Conn
	notifier driver.Notifier
	id       driver.Identifier
	sw       *replySwitch
}

var (
	_ driver.Notifier   = (*replyConn)(nil)
	_ driver.Identifier = (*replyConn)(nil)
)

// withReplyFaults wraps conn, which must implement driver.Notifier and
// driver.Identifier as every locksmith adapter does: a wrapper that hid
// them would change how the Client uses the node.
func withReplyFaults(t *testing.T, conn driver.Conn, sw *replySwitch) *replyConn {
	t.Helper()
	n, okN := conn.(driver.Notifier)
	id, okID := conn.(driver.Identifier)
	if !okN || !okID {
		t.Fatalf("%T: want a Conn that implements driver.Notifier and driver.Identifier", conn)
	}
	return &replyConn{conn: conn, notifier: n, id: id, sw: sw}
}

// faulty runs call as the fault active on c's node says.
func faulty[T any](c *replyConn, call func() (T, error)) (T, error) {
	switch c.sw.get() {
	case appliedTwice:
		_, _ = call()
		return call()
	case replyLost:
		_, _ = call()
		var zero T
		return zero, errReplyLost
	}
	return call()
}

func (c *replyConn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return faulty(c, func() (any, error) { return c.conn.Eval(ctx, script, keys, args) })
}

func (c *replyConn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return faulty(c, func() (any, error) { return c.conn.EvalSha(ctx, sha1, keys, args) })
}

func (c *replyConn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return faulty(c, func() (string, error) { return c.conn.ScriptLoad(ctx, script) })
}

func (c *replyConn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	return c.notifier.Subscribe(ctx, channel, deliver)
}

func (c *replyConn) NodeID() string { return c.id.NodeID() }
