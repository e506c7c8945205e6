package redlock

import (
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/internal/keytext"
	"github.com/locksmith-go/locksmith/internal/quorum"
)

// request is a validated set of keys and TTL with everything derived from
// them.
type request struct {
	names  []string // as given by the caller
	keys   []string // with the key prefix
	fenced []string // keys followed by their fencing counters, with WithFencing
	// extra holds the keys for custom scripts, with Scripts.ExtraKeys. It is
	// a pointer to keep request within the size that closures copy
	// rather than move to the heap.
	extra       *[]string
	ttl         time.Duration
	ttlArg      string // ttl in milliseconds, as sent to the nodes
	drift       time.Duration
	nodeTimeout time.Duration
	// every is set when the scripts get several keys, which a Redis
	// Cluster node may refuse for lying in different hash slots: such a
	// refusal fails the call (crossSlot), so its rounds wait for the
	// reply of every node.
	every bool
}

func (c *Client) newRequest(names []string, ttl time.Duration) (request, error) {
	if len(names) == 0 {
		return request{}, invalidf("no keys given")
	}
	for i, name := range names {
		if name == "" {
			return request{}, invalidf("empty key")
		}
		for _, prev := range names[:i] {
			if prev == name {
				return request{}, invalidf("key %s given twice", keytext.Quote(name))
			}
		}
	}
	if ttl < time.Millisecond {
		return request{}, invalidf("ttl %v is below the 1ms resolution of key expiry", ttl)
	}
	// Nodes keep expiry in whole milliseconds; the lock's validity is
	// computed from the TTL the nodes actually get.
	ttl = ttl.Truncate(time.Millisecond)
	drift := quorum.Drift(ttl, c.cfg.driftFactor)
	if drift >= ttl {
		return request{}, invalidf("ttl %v leaves no validity after the clock-drift allowance of %v", ttl, drift)
	}
	nodeTimeout := c.cfg.nodeTimeout
	if !c.cfg.nodeTimeoutSet {
		nodeTimeout = min(max(time.Duration(float64(ttl)*defaultNodeTimeoutFraction), defaultNodeTimeoutMin), defaultNodeTimeoutMax)
	}
	// A round waits up to the node timeout for a node that does not
	// answer: with no validity left after that, one such node would fail
	// every lock.
	if quorum.Validity(ttl, nodeTimeout, drift) <= 0 {
		return request{}, invalidf("ttl %v leaves no validity after the clock-drift allowance of %v and the node timeout of %v", ttl, drift, nodeTimeout)
	}
	keys := names
	if c.cfg.keyPrefix != "" {
		keys = make([]string, len(names))
		for i, name := range names {
			keys[i] = c.cfg.keyPrefix + name
		}
	}
	for _, key := range keys {
		if strings.HasSuffix(key, fenceSuffix) {
			return request{}, invalidf("key %s ends in %q, reserved for fencing counters", keytext.Quote(key), fenceSuffix)
		}
	}
	var fenced []string
	if c.cfg.fencing {
		var err error
		if fenced, err = fencedKeys(keys); err != nil {
			return request{}, err
		}
	}
	extra, err := c.cfg.extraKeysOf(keys)
	if err != nil {
		return request{}, err
	}
	return request{
		names:       names,
		keys:        keys,
		fenced:      fenced,
		extra:       extra,
		ttl:         ttl,
		ttlArg:      strconv.FormatInt(ttl.Milliseconds(), 10),
		drift:       drift,
		nodeTimeout: nodeTimeout,
		every:       len(keys) > 1 || (extra != nil && c.cfg.anyCustomScript()),
	}, nil
}
