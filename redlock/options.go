package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"math"
	"time"

	"github.com/locksmith-go/locksmith/redlock/observe"
)

// An Option configures a Client. Options are made by the With* functions.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Defaults of the options; each option's documentation states its own.
const (
	// defaultDriftFactor is the share of the TTL set aside for clock drift
	// between the client and the nodes.
	defaultDriftFactor = 0.01

	// defaultNodeTimeoutFraction is the share of the TTL a node may take to
	// reply when WithNodeTimeout is not given, between
	// defaultNodeTimeoutMin and defaultNodeTimeoutMax.
	defaultNodeTimeoutFraction = 0.05

	// defaultNodeTimeoutMin is the least per-node timeout derived from the
	// TTL. A script's round trip to a server on the same host takes well
	// under a millisecond, but the goroutine that reads the reply may first
	// wait for a CPU on a busy host, for a few milliseconds; 5 ms covers
	// both, where 5% of a 10 ms TTL (500 µs) fails even on loopback.
	defaultNodeTimeoutMin = 5 * time.Millisecond

	// defaultNodeTimeoutMax caps the per-node timeout derived from the TTL.
	defaultNodeTimeoutMax = time.Second

	// defaultRetryDelay, defaultRetryJitter and defaultRetryCount make the
	// default strategy: ConstantBackoff(defaultRetryDelay,
	// defaultRetryJitter, defaultRetryCount).
	defaultRetryDelay  = 50 * time.Millisecond
	defaultRetryJitter = 200 * time.Millisecond
	defaultRetryCount  = 32

	// defaultRenewAt is the share of the TTL left on a lock when automatic
	// renewal extends it.
	defaultRenewAt = 0.5

	// defaultLossMargin is the share of the TTL left on a lock when, not
	// renewed by then, it counts as lost.
	defaultLossMargin = 0.1
)

type config struct {
	retry          RetryStrategy
	driftFactor    float64
	nodeTimeout    time.Duration // used when nodeTimeoutSet
	nodeTimeoutSet bool          // false: derived from each call's TTL
	newValue       func() (string, error)
	keyPrefix      string
	fencing        bool
	waitEvery      bool   // rounds wait for every node (tests only)
	skipUnhealthy  bool   // WithSkipUnhealthyNodes; on by default
	skipAlways     []bool // nodes that every acquire skips (tests only)
	evenNodes      bool   // WithEvenNodes

	notifications bool // WithReleaseNotifications; on by default
	closeReleases bool // WithReleaseOnClose; on by default

	renewAt       float64       // share of the TTL left when renewal starts
	lossMargin    float64       // share of the TTL left when a lock not renewed counts as lost
	maxHold       time.Duration // 0: no limit
	maxRenewals   int           // used when limitRenewals
	limitRenewals bool

	obs       observers
	nilLogger bool

	scripts                  Scripts   // WithScripts
	acquire, extend, release scriptUse // built from scripts by buildScripts
}

func newConfig(opts []Option) (config, error) {
	c := config{
		retry:         ConstantBackoff(defaultRetryDelay, defaultRetryJitter, defaultRetryCount),
		driftFactor:   defaultDriftFactor,
		newValue:      randomValue,
		renewAt:       defaultRenewAt,
		lossMargin:    defaultLossMargin,
		notifications: true,
		closeReleases: true,
		skipUnhealthy: true,
	}
	for _, o := range opts {
		if o == nil {
			return config{}, invalidf("nil Option")
		}
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return config{}, err
	}
	return c, c.buildScripts()
}

func (c *config) validate() error {
	switch {
	case c.retry == nil:
		return invalidf("nil RetryStrategy")
	case math.IsNaN(c.driftFactor) || c.driftFactor < 0 || c.driftFactor >= 1:
		return invalidf("drift factor %v is outside [0, 1)", c.driftFactor)
	case c.nodeTimeoutSet && c.nodeTimeout <= 0:
		return invalidf("node timeout %v must be positive", c.nodeTimeout)
	case c.newValue == nil:
		return invalidf("nil value generator")
	case math.IsNaN(c.renewAt) || c.renewAt <= 0 || c.renewAt >= 1:
		return invalidf("renewal point %v is outside (0, 1)", c.renewAt)
	case math.IsNaN(c.lossMargin) || c.lossMargin <= 0 || c.lossMargin >= c.renewAt:
		return invalidf("loss margin %v is outside (0, renewal point %v)", c.lossMargin, c.renewAt)
	case c.maxHold < 0:
		return invalidf("max hold %v is negative", c.maxHold)
	case c.nilLogger:
		return invalidf("nil *slog.Logger")
	case c.maxRenewals < 0:
		return invalidf("max renewals %d is negative", c.maxRenewals)
	}
	if v, ok := c.retry.(validator); ok {
		return v.validate()
	}
	return nil
}

// WithRetryStrategy sets how Lock retries after a failed attempt. TryLock
// never retries. Default: ConstantBackoff(50*time.Millisecond,
// 200*time.Millisecond, 32), that is up to 32 retries 50 to 250 ms apart.
func WithRetryStrategy(s RetryStrategy) Option {
	return optionFunc(func(c *config) { c.retry = s })
}

// WithDriftFactor sets the share of the TTL set aside for clock drift
// between the client and the nodes; 2 ms are always added to it. A lock is
// only considered valid until start + TTL - drift. The factor must be in
// [0, 1). Default: 0.01.
func WithDriftFactor(f float64) Option {
	return optionFunc(func(c *config) { c.driftFactor = f })
}

// WithSkipUnhealthyNodes sets whether a new lock skips the nodes that are
// behind the others or failing. Default: true.
//
// A node is behind while requests that outlived their calls are still
// running on it; it is failing after 3 failed requests in a row. A new
// lock sends such a node none of its requests, for at most as many nodes
// as still leave a quorum. The node's NodeError then matches
// ErrNodeSkipped, and it counts as a node that cannot hold the lock. A
// slow node is thus not handed a queue of requests that would time out,
// and a refusing node is not dialled for every request. The cost is fault
// tolerance: the lock is held on the other nodes only, for its whole life.
//
// Nothing is skipped with one or two nodes, nor for locks whose keys may
// lie in different Redis Cluster hash slots. docs/design.md, "Health",
// has the exact rules.
func WithSkipUnhealthyNodes(on bool) Option {
	return optionFunc(func(c *config) { c.skipUnhealthy = on })
}

// WithNodeTimeout sets how long one node may take to answer one request.
// A node that does not answer in time counts as failed for that round.
// It must be positive. Default: 5% of the TTL, at least 5 ms and at most
// 1 s.
//
// A call whose TTL leaves no validity after the drift allowance and the
// node timeout (a round waits that long for a node that does not answer)
// is refused with an error matching ErrInvalidArgument.
//
// Keep it well below the TTL: a round takes as long as its slowest node,
// and that time is taken off the lock's validity. If the Redis client has
// retries of its own, make sure they fit within this timeout.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.nodeTimeout = d
		c.nodeTimeoutSet = true
	})
}

// WithValueGenerator sets the function that makes the random value stored
// in the lock keys. Each attempt calls it once; it must return a value no
// other owner could produce, since the value is what proves ownership.
// Default: 128 bits from crypto/rand, base64url-encoded (22 characters).
func WithValueGenerator(f func() (string, error)) Option {
	return optionFunc(func(c *config) { c.newValue = f })
}

// WithKeyPrefix sets a prefix put in front of every resource name to form
// the Redis key. Default: no prefix, so the key is the resource name, as in
// the other Redlock implementations; processes that lock the same resource
// through different libraries then exclude each other.
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.keyPrefix = prefix })
}

func randomValue() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// WithRenewal sets when automatic renewal ([Client.Do], [Lock.KeepAlive])
// acts, as shares of the lock's TTL left before [Lock.ValidUntil].
//
// When renewAt of the TTL is left, the lock is extended by its TTL; a round
// that fails on node errors is retried. When only lossMargin is left and no
// round has succeeded, the lock counts as lost and the context handed to the
// caller is cancelled, so the margin is the time the caller has to stop
// using the resource. They must satisfy 0 < lossMargin < renewAt < 1.
// Defaults: 0.5 and 0.1: renewal when half the TTL is left, loss when a
// tenth is left.
func WithRenewal(renewAt, lossMargin float64) Option {
	return optionFunc(func(c *config) {
		c.renewAt = renewAt
		c.lossMargin = lossMargin
	})
}

// WithMaxHold bounds how long automatic renewal keeps a lock, counted from
// its acquisition. Once the bound is reached renewal stops and the context
// handed to the caller is cancelled with a cause matching ErrHoldLimit.
// Zero means no bound. Default: no bound.
func WithMaxHold(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxHold = d })
}

// WithMaxRenewals bounds how many times automatic renewal extends a lock.
// When the next renewal would exceed it, renewal stops and the context
// handed to the caller is cancelled with a cause matching ErrHoldLimit.
// Zero allows no renewal at all. Default: no bound.
func WithMaxRenewals(n int) Option {
	return optionFunc(func(c *config) {
		c.maxRenewals = n
		c.limitRenewals = true
	})
}

// WithFencing makes every lock of the Client carry a fencing token
// ([Lock.Token]): a number strictly greater than the token of every lock on
// the same resource whose acquisition completed before this one started.
// Acquiring costs a second round of requests. Default: off.
//
// Each resource gets a counter key on every node, which never expires; see
// the package documentation, "Fencing tokens". Fenced locks require every
// node to run with appendonly yes and appendfsync always: a restart delayed
// past the longest TTL, enough for plain locks, loses the counters, and
// tokens can then go back.
func WithFencing() Option {
	return optionFunc(func(c *config) { c.fencing = true })
}

// WithEvenNodes(true) lets New accept an even number of nodes. A lock
// needs a majority, N/2+1 of N nodes, so an even count tolerates no more
// failed nodes than the odd count below it, with one more node that may
// fail: 2 nodes tolerate none, 4 tolerate one, as 3 do. Locks are as safe
// with any count; New refuses an even one unless this option says it is
// meant, as while adding a node to go from 3 to 5. Default: false.
func WithEvenNodes(allow bool) Option {
	return optionFunc(func(c *config) { c.evenNodes = allow })
}

// WithObserver adds callbacks called as locks are acquired, extended, lost
// and released; see [observe.Observer] for the events and the rules
// callbacks must follow. It may be given several times: the Observers are
// called in the order given. Default: none.
func WithObserver(o observe.Observer) Option {
	return optionFunc(func(c *config) { c.obs = append(c.obs, o) })
}

// WithLogger logs the events of [observe.Observer] to logger: routine successes at
// Debug, failed attempts, failed extensions, unconfirmed releases and node
// errors at Warn, a lock given up by renewal at Error; a Lock call that
// ends without the lock at Info (the key is held elsewhere or the caller
// gave up) or Warn (the nodes failed). Records carry the keys, the node,
// the votes, elapsed times and a short prefix of the lock's value. A nil
// logger is an error. Default: nothing is logged.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if logger == nil {
			c.nilLogger = true
			return
		}
		c.obs = append(c.obs, logObserver(logger))
	})
}
