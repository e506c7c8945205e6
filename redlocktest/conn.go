package redlocktest

import (
	"context"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// conn is a node's driver.Conn: it sends each request to the node's server
// once the node's faults let it through.
type conn struct {
	node *Node
	// notifier is the same Conn with Subscribe, or nil when the Cluster
	// was made WithoutNotifications.
	notifier *notifier
}

var _ driver.Conn = (*conn)(nil)

func (c *conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return send(ctx, c.node, func(raw *resp.Notifier) (any, error) { return raw.Eval(ctx, script, keys, args) })
}

func (c *conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return send(ctx, c.node, func(raw *resp.Notifier) (any, error) { return raw.EvalSha(ctx, sha1, keys, args) })
}

func (c *conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	return send(ctx, c.node, func(raw *resp.Notifier) (string, error) { return raw.ScriptLoad(ctx, script) })
}

// send runs request once node's faults let it through.
func send[T any](ctx context.Context, node *Node, request func(raw *resp.Notifier) (T, error)) (T, error) {
	raw, err := node.admit(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer node.end()
	return request(raw)
}

// notifier is a node's Conn with release notifications.
type notifier struct {
	*conn
}

var _ driver.Notifier = (*notifier)(nil)

// Subscribe counts as a request only until the subscription is made: it
// changes no key.
func (c *notifier) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	return send(ctx, c.node, func(raw *resp.Notifier) (func(), error) { return raw.Subscribe(ctx, channel, deliver) })
}

// Conn returns the driver.Conn through which the node is reached, the same
// value each time. It implements driver.Notifier unless the Cluster was made
// WithoutNotifications.
func (n *Node) Conn() driver.Conn {
	if n.missing() {
		return nil
	}
	if n.conn.notifier != nil {
		return n.conn.notifier
	}
	return n.conn
}
