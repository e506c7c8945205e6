package faults

import (
	"context"
	"sync/atomic"

	"github.com/locksmith-go/locksmith/driver"
)

// CountReplies returns n with a count of the script replies it returns
// (errors included) added to replies, so a test can tell when the attempts
// of a waiting Lock call are over on every node without sleeping. Subscribe
// passes through, so the result is a driver.Notifier like n.
func CountReplies(n driver.Notifier, replies *atomic.Int64) driver.Notifier {
	return replyCounter{n, replies}
}

type replyCounter struct {
	driver.Notifier
	replies *atomic.Int64
}

func (c replyCounter) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	defer c.replies.Add(1)
	return c.Notifier.Eval(ctx, script, keys, args)
}

func (c replyCounter) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	defer c.replies.Add(1)
	return c.Notifier.EvalSha(ctx, sha1, keys, args)
}
