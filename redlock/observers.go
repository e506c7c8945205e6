package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// observers are the Observers given to WithObserver and WithLogger, called
// in that order. Every method returns at once when there are none, before
// building any event, so an unobserved Client pays a length check.
type observers []observe.Observer

// call runs one callback, recovering a panic (see observe.Observer).
func call[I any](f func(context.Context, I), ctx context.Context, info I) {
	if f == nil {
		return
	}
	defer func() { _ = recover() }()
	f(ctx, info)
}

// lockTrace follows one Lock call for its callbacks; nil when the Client
// has no observer, and then every method does nothing.
type lockTrace struct {
	obs     observers
	ctx     context.Context // as returned by the LockStart callbacks
	keys    []string
	nodes   int
	start   time.Time
	attempt int
}

// startLock reports a Lock call's start and returns its trace.
func (o observers) startLock(ctx context.Context, req request, nodes int) *lockTrace {
	if len(o) == 0 {
		return nil
	}
	t := &lockTrace{obs: o, ctx: ctx, keys: req.names, nodes: nodes, start: time.Now()}
	info := observe.LockStartInfo{Keys: req.names, TTL: req.ttl, Start: t.start}
	for _, ob := range o {
		if ob.LockStart != nil {
			t.ctx = callStart(ob.LockStart, t.ctx, info)
		}
	}
	return t
}

// callStart runs a LockStart callback, keeping ctx when it panics or
// returns nil.
func callStart(f func(context.Context, observe.LockStartInfo) context.Context, ctx context.Context, info observe.LockStartInfo) (next context.Context) {
	next = ctx
	defer func() {
		if recover() != nil || next == nil {
			next = ctx
		}
	}()
	return f(ctx, info)
}

// attemptStart notes the number of the attempt that starts, for the
// attempt's round and the call's outcome.
func (t *lockTrace) attemptStart(attempt int) {
	if t != nil {
		t.attempt = attempt
	}
}

// attemptDone reports an attempt's round.
func (t *lockTrace) attemptDone(start time.Time, value string, v votes, validity time.Duration, ok bool) {
	if t == nil {
		return
	}
	t.obs.round(t.ctx, OpLock, t.keys, value, t.attempt, t.nodes, start, v, validity, ok)
}

// done reports how the Lock call ended.
func (t *lockTrace) done(l *Lock, err error) {
	if t == nil {
		return
	}
	elapsed := time.Since(t.start)
	if err == nil {
		info := observe.AcquiredInfo{Keys: t.keys, Value: valuePrefix(l.value), Token: l.token, Attempts: t.attempt,
			Start: t.start, Elapsed: elapsed, ValidUntil: l.ValidUntil()}
		for _, ob := range t.obs {
			call(ob.Acquired, t.ctx, info)
		}
		return
	}
	info := observe.NotAcquiredInfo{Keys: t.keys, Attempts: t.attempt, Start: t.start, Elapsed: elapsed, Reason: reasonOf(err), Err: err}
	for _, ob := range t.obs {
		call(ob.NotAcquired, t.ctx, info)
	}
}

// reasonOf classifies the error of a Lock call.
func reasonOf(err error) observe.Reason {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return observe.ReasonCanceled
	}
	var qe *QuorumError
	switch {
	case !errors.As(err, &qe):
		return observe.ReasonError
	case qe.Granted >= qe.Quorum:
		return observe.ReasonNoValidity
	case qe.Refused > 0:
		return observe.ReasonHeld
	}
	return observe.ReasonNodeErrors
}

// round reports a round to the callback of its operation.
func (o observers) round(ctx context.Context, op Op, keys []string, value string, attempt, nodes int, start time.Time, v votes, validity time.Duration, ok bool) {
	if len(o) == 0 {
		return
	}
	o.roundInfo(ctx, observe.RoundInfo{
		Op: string(op), Keys: keys, Value: valuePrefix(value), Attempt: attempt,
		Nodes: nodes, Quorum: quorum.Size(nodes), Granted: v.granted, Refused: v.refused, Errors: v.eventErrors(),
		Start: start, Elapsed: time.Since(start), Validity: validity, OK: ok,
	})
}

func (o observers) roundInfo(ctx context.Context, info observe.RoundInfo) {
	for _, ob := range o {
		switch {
		case Op(info.Op) == OpLock:
			call(ob.AttemptDone, ctx, info)
		case Op(info.Op) == OpUnlock:
			call(ob.Released, ctx, info)
		case info.OK:
			call(ob.Extended, ctx, info)
		default:
			call(ob.ExtendFailed, ctx, info)
		}
	}
}

// extended reports an extend round of l.
func (o observers) extended(ctx context.Context, l *Lock, req request, start time.Time, v votes, validity time.Duration, ok bool) {
	if len(o) == 0 {
		return
	}
	o.round(ctx, OpExtend, req.names, l.value, 0, len(l.client.nodes), start, v, validity, ok)
}

// released reports the release round of l, acquired at acquired.
func (o observers) released(ctx context.Context, l *Lock, req request, start, acquired time.Time, v votes, ok bool) {
	if len(o) == 0 {
		return
	}
	nodes := len(l.client.nodes)
	o.roundInfo(ctx, observe.RoundInfo{
		Op: string(OpUnlock), Keys: req.names, Value: valuePrefix(l.value),
		Nodes: nodes, Quorum: quorum.Size(nodes), Granted: v.granted, Refused: v.refused, Errors: v.eventErrors(),
		Start: start, Elapsed: time.Since(start), Held: start.Sub(acquired), OK: ok,
	})
}

// lockLost reports that renewal gave up the lock on keys with value.
func (o observers) lockLost(ctx context.Context, keys []string, value string, cause error) {
	if len(o) == 0 {
		return
	}
	info := observe.LockLostInfo{Keys: keys, Value: valuePrefix(value), Err: cause}
	for _, ob := range o {
		call(ob.LockLost, ctx, info)
	}
}

// valuePrefixLen is how much of a lock value events show: 4 characters of
// the default 22 are 24 of its 128 bits, enough to tell locks apart in a
// log, far too few to guess the rest.
const valuePrefixLen = 4

// valuePrefix returns the part of a lock value that events may show. A
// value shorter than 16 characters (from WithValueGenerator) is not shown
// at all, since a prefix would give away too much of it.
func valuePrefix(value string) string {
	if len(value) < 16 {
		return ""
	}
	return value[:valuePrefixLen] + "…"
}
