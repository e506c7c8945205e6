package redsync

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// A Mutex is a distributed mutual exclusion lock on one Redis key, granted
// by a majority of the nodes of the Redsync that made it.
//
// A Mutex holds at most one lock at a time: its value (the proof of
// ownership) and its validity. Its methods may be called from several
// goroutines, for example one extending the lock while another reads
// [Mutex.Until], but a Mutex must not be copied.
type Mutex struct {
	name string

	// Set by options before the mutex is used.
	expiry        time.Duration
	tries         int
	delayFunc     DelayFunc
	driftFactor   float64
	timeoutFactor float64
	genValueFunc  func() (string, error)
	shuffle       bool
	failFast      bool
	setNXOnExtend bool

	nodes  []*scripts.Node
	quorum int
	err    error // a configuration error, reported by every call that does I/O

	mu    sync.Mutex
	value string    // WithValue sets it before mu is in use
	until time.Time // on the monotonic clock
}

// Name returns the mutex's name, which is its Redis key.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Value returns the value stored in the key by the last successful Lock,
// or set by [WithValue]; it is empty before either. Whoever knows it can
// extend or release the lock, so treat it as a secret.
func (m *Mutex) Value() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.value
}

// Until returns the time until which the lock taken by the last successful
// Lock or Extend is valid: the start of that round plus the expiry, less
// the drift allowance, on the local monotonic clock. It is the zero Time
// before the first successful Lock or Extend. Unlock does not reset it.
func (m *Mutex) Until() time.Time {
	if m == nil {
		return time.Time{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.until
}

// TryLock is TryLockContext with context.Background().
func (m *Mutex) TryLock() error {
	return m.TryLockContext(context.Background())
}

// TryLockContext makes a single attempt to lock m, without retrying.
// Errors are as for LockContext, except that a ctx already done is
// reported by an error that matches both ErrFailed and ctx.Err(), and a
// ctx that ends during the attempt by the nodes' errors, which match
// ctx.Err().
func (m *Mutex) TryLockContext(ctx context.Context) error {
	return m.lockContext(ctx, 1)
}

// Lock is LockContext with context.Background().
func (m *Mutex) Lock() error {
	return m.LockContext(context.Background())
}

// LockContext locks m, making up to the number of attempts set by
// [WithTries] with the delays set by [WithRetryDelay] or
// [WithRetryDelayFunc] in between. Each attempt stores a fresh value in the
// key on every node at once; it succeeds when a quorum of nodes set it and
// some validity is left (see [Mutex.Until]). A failed attempt is released
// on every node, even if ctx was cancelled meanwhile.
//
// When every attempt fails, the error is the last attempt's: a *ErrTaken
// when a quorum of nodes hold the key for another owner, otherwise the
// joined *ErrNodeTaken and *RedisError of the nodes that did not agree, or
// ErrFailed when all went well but too slowly. When ctx ends before the
// last attempt, the error is ErrFailed itself, as in go-redsync/redsync, so
// that callers comparing it with == keep working: check ctx.Err() to tell
// that case apart. A nil ctx is taken as context.Background(). m can be
// locked again after a failure.
func (m *Mutex) LockContext(ctx context.Context) error {
	if err := m.usable(); err != nil {
		return err
	}
	if m.tries < 1 && m.err == nil {
		return configErrorf("WithTries(%d): a mutex needs at least one try", m.tries)
	}
	return m.lockContext(ctx, m.tries)
}

func (m *Mutex) lockContext(ctx context.Context, tries int) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := m.plan()
	if err != nil {
		return err
	}
	var timer *time.Timer
	for attempt := range tries {
		if attempt > 0 {
			delay := m.delayFunc(attempt)
			if timer == nil {
				timer = time.NewTimer(delay)
				defer timer.Stop()
			} else {
				timer.Reset(delay)
			}
			select {
			case <-ctx.Done():
				return ErrFailed
			case <-timer.C:
			}
		}
		if err := ctx.Err(); err != nil {
			if tries > 1 {
				return ErrFailed
			}
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		value, err := m.genValueFunc()
		if err != nil {
			return fmt.Errorf("redsync: generating a value: %w", err)
		}
		if value == "" {
			return configErrorf("the value function of WithGenValueFunc returned an empty value")
		}

		start := time.Now()
		granted, err := m.round(ctx, p.timeout, m.ask(scripts.Acquire, value, p.ttlArg))
		validity := quorum.Validity(p.ttl, time.Since(start), p.drift)
		if quorum.Granted(granted, len(m.nodes), validity) {
			m.mu.Lock()
			m.value = value
			m.until = start.Add(p.ttl - p.drift)
			m.mu.Unlock()
			return nil
		}

		// Nodes that did not answer may still have set the key, and a
		// caller giving up must not leave it behind.
		m.round(context.WithoutCancel(ctx), p.timeout, m.release(value))
		if attempt == tries-1 && err != nil {
			return err
		}
	}
	return ErrFailed
}

// Unlock is UnlockContext with context.Background().
func (m *Mutex) Unlock() (bool, error) {
	return m.UnlockContext(context.Background())
}

// UnlockContext deletes the key on every node where it still holds m's
// value, and reports whether a quorum of nodes did. It does not wait for
// ctx: the release runs to its end even when ctx is cancelled, each round
// bounded by the timeout of [WithTimeoutFactor], so a caller giving up still
// releases its lock.
//
// When fewer than a quorum confirm, it returns false and an error: a
// *ErrTaken when a quorum hold the key for another owner; otherwise the
// joined errors of the nodes, where ErrLockAlreadyExpired (matched with
// errors.Is) marks each node on which the key no longer existed, as
// after the lock expired.
func (m *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := m.plan()
	if err != nil {
		return false, err
	}
	n, err := m.round(context.WithoutCancel(ctx), p.timeout, m.release(m.Value()))
	if n < m.quorum {
		return false, err
	}
	return true, nil
}

func (m *Mutex) release(value string) request {
	return func(ctx context.Context, node *scripts.Node) (bool, error) {
		reply, err := node.Run(ctx, releaseScript, []string{m.name}, []string{value})
		if err == nil && reply == int64(-1) {
			return false, ErrLockAlreadyExpired
		}
		return yesOrNo(reply, err)
	}
}

// Extend is ExtendContext with context.Background().
func (m *Mutex) Extend() (bool, error) {
	return m.ExtendContext(context.Background())
}

// ExtendContext resets the key's time to live to the expiry on every node
// where it still holds m's value and, when a quorum did so with validity
// left, moves [Mutex.Until] to the start of this round plus the expiry, less
// the drift allowance. A node where the key no longer exists counts as
// refusing, unless [WithSetNXOnExtend] is given: then it takes the key
// again.
//
// It returns false and ErrExtendFailed when the round took too long to
// leave any validity, and false with an error built as for UnlockContext
// when fewer than a quorum agreed (a *ErrTaken when a quorum of nodes no
// longer hold m's value). A mutex with no value (never locked, and no
// [WithValue]) is refused with ErrExtendFailed without contacting the
// nodes.
func (m *Mutex) ExtendContext(ctx context.Context) (bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := m.plan()
	if err != nil {
		return false, err
	}
	value := m.Value()
	if value == "" {
		return false, ErrExtendFailed
	}
	script := scripts.Extend
	if m.setNXOnExtend {
		script = extendSetNXScript
	}
	start := time.Now()
	n, err := m.round(ctx, p.timeout, m.ask(script, value, p.ttlArg))
	if n < m.quorum {
		return false, err
	}
	if quorum.Validity(p.ttl, time.Since(start), p.drift) <= 0 {
		return false, ErrExtendFailed
	}
	m.mu.Lock()
	m.until = start.Add(p.ttl - p.drift)
	m.mu.Unlock()
	return true, nil
}

// Valid is ValidContext with context.Background().
//
// Deprecated: Use [Mutex.Until]: a lock is valid while time.Now() is before
// it. Valid asks the nodes, and a node may answer after the lock expired.
func (m *Mutex) Valid() (bool, error) {
	return m.ValidContext(context.Background())
}

// ValidContext reports whether a quorum of nodes hold the key with m's
// value. The answer can be stale by the time it returns: a node may reply
// after the lock has expired. A mutex with no value is never valid. The
// error is built as for UnlockContext, whatever the answer.
//
// Deprecated: Use [Mutex.Until]: a lock is valid while time.Now() is before
// it.
func (m *Mutex) ValidContext(ctx context.Context) (bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := m.plan()
	if err != nil {
		return false, err
	}
	value := m.Value()
	n, err := m.round(ctx, p.timeout, func(ctx context.Context, node *scripts.Node) (bool, error) {
		if value == "" {
			return false, nil
		}
		return yesOrNo(node.Run(ctx, holdsScript, []string{m.name}, []string{value}))
	})
	return n >= m.quorum, err
}

// ask is the request that runs script on m's key with args, answered 1
// (yes) or 0 (no).
func (m *Mutex) ask(script *scripts.Script, args ...string) request {
	return func(ctx context.Context, node *scripts.Node) (bool, error) {
		return yesOrNo(node.Run(ctx, script, []string{m.name}, args))
	}
}

// yesOrNo reads a script's 1 (yes) or 0 (no) reply.
func yesOrNo(reply any, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	switch reply {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("unexpected reply %#v", reply)
}

// plan is what every call derives from the mutex's options.
type plan struct {
	ttl     time.Duration // the expiry in whole milliseconds, as the nodes get it
	ttlArg  string        // ttl in milliseconds, as a script argument
	drift   time.Duration
	timeout time.Duration // for one round of requests
}

// usable reports a Mutex that NewMutex did not make: a nil *Mutex or the
// zero value, which has no nodes and none of NewMutex's defaults.
func (m *Mutex) usable() error {
	switch {
	case m == nil:
		return configErrorf("nil *Mutex: make one with redsync.New(pools...).NewMutex(name)")
	case m.nodes == nil && m.err == nil:
		return configErrorf("Mutex not made by NewMutex: make one with redsync.New(pools...).NewMutex(name)")
	}
	return nil
}

// plan checks the configuration and derives the plan from it. Options can
// be applied by hand at any time through Option.Apply, so it runs on every
// call rather than once in NewMutex.
func (m *Mutex) plan() (plan, error) {
	if err := m.usable(); err != nil {
		return plan{}, err
	}
	if m.err != nil {
		return plan{}, m.err
	}
	switch {
	case m.expiry < time.Millisecond:
		return plan{}, configErrorf("WithExpiry(%v): below 1ms, the resolution of key expiry", m.expiry)
	case math.IsNaN(m.driftFactor) || m.driftFactor < 0 || m.driftFactor >= 1:
		return plan{}, configErrorf("WithDriftFactor(%v): outside [0, 1)", m.driftFactor)
	case math.IsNaN(m.timeoutFactor) || m.timeoutFactor <= 0 || m.timeoutFactor >= 1:
		return plan{}, configErrorf("WithTimeoutFactor(%v): outside (0, 1)", m.timeoutFactor)
	case m.delayFunc == nil:
		return plan{}, configErrorf("WithRetryDelayFunc(nil)")
	case m.genValueFunc == nil:
		return plan{}, configErrorf("WithGenValueFunc(nil)")
	}
	ttl := m.expiry.Truncate(time.Millisecond)
	drift := quorum.Drift(ttl, m.driftFactor)
	if drift >= ttl {
		return plan{}, configErrorf("WithExpiry(%v): leaves no validity after the clock-drift allowance of %v", m.expiry, drift)
	}
	timeout := time.Duration(float64(ttl) * m.timeoutFactor)
	if timeout < time.Millisecond {
		return plan{}, configErrorf("WithTimeoutFactor(%v): gives a round timeout of %v with an expiry of %v, below 1ms", m.timeoutFactor, timeout, ttl)
	}
	return plan{
		ttl:     ttl,
		ttlArg:  strconv.FormatInt(ttl.Milliseconds(), 10),
		drift:   drift,
		timeout: timeout,
	}, nil
}
