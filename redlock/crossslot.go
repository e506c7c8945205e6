package redlock

import (
	"fmt"
	"strings"

	"github.com/locksmith-go/locksmith/internal/keytext"
)

// isCrossSlot reports whether err is a Redis Cluster node's refusal of a
// request whose keys lie in different hash slots. Redis starts that error
// reply with CROSSSLOT, and no driver gives it a type of its own, so the
// text is the only signal; this is the one place that reads it.
func isCrossSlot(err error) bool {
	return err != nil && strings.Contains(err.Error(), "CROSSSLOT")
}

// crossSlot returns an error matching ErrInvalidArgument when one of errs
// is a CROSSSLOT refusal of the keys of req, and nil otherwise. Such a
// refusal is the caller's mistake, not a node fault: counted as a failed
// node, it would let a lock run on the other nodes with less fault
// tolerance than configured, so the call fails instead.
func (c *Client) crossSlot(req request, errs []*NodeError) error {
	for _, ne := range errs {
		if !isCrossSlot(ne.Err) {
			continue
		}
		keys := req.keys
		if req.extra != nil && c.cfg.anyCustomScript() {
			keys = append(keys[:len(keys):len(keys)], *req.extra...)
		}
		return fmt.Errorf("%w: keys %s lie in different Redis Cluster hash slots; give them a common hash tag, as in {order:42}:payment and {order:42}:stock: %w",
			ErrInvalidArgument, keytext.QuoteAll(keys), ne)
	}
	return nil
}
