// Package otel records the events of locksmith's locks as OpenTelemetry
// metrics and spans. It lives in its own module so that only programs that
// use OpenTelemetry download it. Import it under another name, since the
// OpenTelemetry API package is called otel too:
//
//	import lsotel "github.com/locksmith-go/locksmith/otel"
//
//	obs, err := lsotel.NewObserver() // the global MeterProvider and TracerProvider
//	...
//	client, err := redlock.New(conns, redlock.WithObserver(obs))
//
// # Metrics
//
// All in the meter named "github.com/locksmith-go/locksmith/otel":
//
//	locksmith.lock.acquire.duration   histogram, s        time of a Lock call; locksmith.outcome
//	locksmith.lock.acquire.attempts   histogram, {attempt} attempts of a Lock call; locksmith.outcome
//	locksmith.lock.acquires           counter, {call}     Lock calls; locksmith.outcome
//	locksmith.lock.extends            counter, {round}    extend rounds; locksmith.outcome
//	locksmith.lock.hold.duration      histogram, s        from acquisition to Unlock; locksmith.outcome
//	locksmith.lock.lost               counter, {lock}     locks given up by automatic renewal
//	locksmith.node.errors             counter, {error}    node failures; locksmith.node, locksmith.operation
//
// locksmith.outcome is "acquired" or the [observe.Reason] for Lock calls,
// "ok" or "failed" for extends, "confirmed" or "unconfirmed" for releases.
// locksmith.node is the node's index in the slice given to redlock.New.
// Lock keys are not metric attributes, since their number is unbounded.
//
// # Spans
//
// A Lock call is a span named "locksmith.Lock", a child of the span in the
// caller's context, with an "attempt" event per attempt (votes, validity)
// and a "node_error" event per failed node. A call that returns without
// the lock says why in locksmith.outcome. Its status is Error, with the
// error recorded, only when the nodes or locksmith failed; it stays Unset
// when the key is held elsewhere ("held"), since contention is not an
// error, and when the caller's context ended ("canceled") unless the last
// attempt met failing nodes and no holder. Extend, automatic renewal, Resume and Unlock
// make spans named "locksmith.Extend" and "locksmith.Unlock", one per round
// of requests, with a "node_error" event per failed node. Spans carry the
// lock keys (locksmith.keys) and at most a short prefix of the lock value
// (locksmith.value_prefix), never the value itself.
package otel

import (
	"context"
	"errors"
	"fmt"
	"iter"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/locksmith-go/locksmith/otel"

// An Option configures NewObserver.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
}

// WithMeterProvider sets where metrics are recorded. Default: the global
// MeterProvider (go.opentelemetry.io/otel.GetMeterProvider) at the time
// NewObserver is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets where spans are recorded. Default: the global
// TracerProvider (go.opentelemetry.io/otel.GetTracerProvider) at the time
// NewObserver is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

func newConfig(opts []Option) (config, error) {
	c := config{meterProvider: otelglobal.GetMeterProvider(), tracerProvider: otelglobal.GetTracerProvider()}
	for _, o := range opts {
		if o == nil {
			return config{}, fmt.Errorf("locksmith/otel: nil Option")
		}
		o.apply(&c)
	}
	switch {
	case c.meterProvider == nil:
		return config{}, fmt.Errorf("locksmith/otel: nil MeterProvider")
	case c.tracerProvider == nil:
		return config{}, fmt.Errorf("locksmith/otel: nil TracerProvider")
	}
	return c, nil
}

// instruments are the metrics an Observer records.
type instruments struct {
	acquireDuration metric.Float64Histogram
	acquireAttempts metric.Int64Histogram
	acquires        metric.Int64Counter
	extends         metric.Int64Counter
	holdDuration    metric.Float64Histogram
	lost            metric.Int64Counter
	nodeErrors      metric.Int64Counter
}

// Attribute keys.
const (
	keyOutcome     = attribute.Key("locksmith.outcome")
	keyNode        = attribute.Key("locksmith.node")
	keyOperation   = attribute.Key("locksmith.operation")
	keyKeys        = attribute.Key("locksmith.keys")
	keyValuePrefix = attribute.Key("locksmith.value_prefix")
	keyAttempt     = attribute.Key("locksmith.attempt")
	keyGranted     = attribute.Key("locksmith.granted")
	keyRefused     = attribute.Key("locksmith.refused")
	keyQuorum      = attribute.Key("locksmith.quorum")
	keyValidity    = attribute.Key("locksmith.validity_ms")
	keyErrors      = attribute.Key("locksmith.errors")
)

func newInstruments(m metric.Meter) (instruments, error) {
	var ins instruments
	var err error
	// Lock latencies range from a fraction of a millisecond (one attempt
	// on a local network) to the whole retry budget (seconds).
	latency := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	if ins.acquireDuration, err = m.Float64Histogram("locksmith.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of a Lock call, from its start until it returns."), latency); err != nil {
		return ins, err
	}
	if ins.acquireAttempts, err = m.Int64Histogram("locksmith.lock.acquire.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by a Lock call."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 5, 8, 13, 21, 34)); err != nil {
		return ins, err
	}
	if ins.acquires, err = m.Int64Counter("locksmith.lock.acquires", metric.WithUnit("{call}"),
		metric.WithDescription("Lock calls, by outcome.")); err != nil {
		return ins, err
	}
	if ins.extends, err = m.Int64Counter("locksmith.lock.extends", metric.WithUnit("{round}"),
		metric.WithDescription("Extend rounds, by outcome.")); err != nil {
		return ins, err
	}
	if ins.holdDuration, err = m.Float64Histogram("locksmith.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a lock's acquisition to its release."),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)); err != nil {
		return ins, err
	}
	if ins.lost, err = m.Int64Counter("locksmith.lock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks given up by automatic renewal.")); err != nil {
		return ins, err
	}
	if ins.nodeErrors, err = m.Int64Counter("locksmith.node.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failures of a node in a round of requests, by node index and operation.")); err != nil {
		return ins, err
	}
	return ins, nil
}

// NewObserver returns an [observe.Observer] that records metrics and
// spans; give it to redlock.New with redlock.WithObserver. It fails only
// when an instrument cannot be created or an option is nil.
func NewObserver(opts ...Option) (observe.Observer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return observe.Observer{}, err
	}
	ins, err := newInstruments(cfg.meterProvider.Meter(ScopeName))
	if err != nil {
		return observe.Observer{}, fmt.Errorf("locksmith/otel: %w", err)
	}
	r := &recorder{ins: ins, tracer: cfg.tracerProvider.Tracer(ScopeName)}
	return observe.Observer{
		LockStart:    r.lockStart,
		AttemptDone:  r.attemptDone,
		Acquired:     r.acquired,
		NotAcquired:  r.notAcquired,
		Extended:     r.extendRound,
		ExtendFailed: r.extendRound,
		LockLost:     r.lockLost,
		Released:     r.released,
	}, nil
}

// recorder turns events into measurements and spans.
type recorder struct {
	ins    instruments
	tracer trace.Tracer
}

// lockSpan marks the context of a Lock call's span, so that events of
// other operations never land on a caller's span.
type lockSpan struct{}

func (r *recorder) lockStart(ctx context.Context, info observe.LockStartInfo) context.Context {
	ctx, _ = r.tracer.Start(ctx, "locksmith.Lock",
		trace.WithTimestamp(info.Start), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(keyKeys.StringSlice(info.Keys)))
	return context.WithValue(ctx, lockSpan{}, true)
}

// ownSpan returns the span of a Lock call started by lockStart, or nil.
func ownSpan(ctx context.Context) trace.Span {
	if ctx.Value(lockSpan{}) == nil {
		return nil
	}
	return trace.SpanFromContext(ctx)
}

func (r *recorder) attemptDone(ctx context.Context, info observe.RoundInfo) {
	r.countNodeErrors(ctx, info)
	if span := ownSpan(ctx); span != nil {
		for ne := range failedNodes(info) {
			span.AddEvent("node_error", trace.WithTimestamp(info.Start.Add(info.Elapsed)),
				trace.WithAttributes(append(nodeErrorAttrs(ne), keyAttempt.Int(info.Attempt))...))
		}
		span.AddEvent("attempt", trace.WithAttributes(append(roundAttrs(info), attribute.Bool("locksmith.ok", info.OK))...))
	}
}

func (r *recorder) acquired(ctx context.Context, info observe.AcquiredInfo) {
	outcome := metric.WithAttributes(keyOutcome.String("acquired"))
	r.ins.acquireDuration.Record(ctx, info.Elapsed.Seconds(), outcome)
	r.ins.acquireAttempts.Record(ctx, int64(info.Attempts), outcome)
	r.ins.acquires.Add(ctx, 1, outcome)
	if span := ownSpan(ctx); span != nil {
		span.SetAttributes(keyValuePrefix.String(info.Value), attribute.Int("locksmith.attempts", info.Attempts))
		span.End(trace.WithTimestamp(info.Start.Add(info.Elapsed)))
	}
}

func (r *recorder) notAcquired(ctx context.Context, info observe.NotAcquiredInfo) {
	outcome := metric.WithAttributes(keyOutcome.String(string(info.Reason)))
	r.ins.acquireDuration.Record(ctx, info.Elapsed.Seconds(), outcome)
	r.ins.acquireAttempts.Record(ctx, int64(info.Attempts), outcome)
	r.ins.acquires.Add(ctx, 1, outcome)
	if span := ownSpan(ctx); span != nil {
		span.SetAttributes(keyOutcome.String(string(info.Reason)), attribute.Int("locksmith.attempts", info.Attempts))
		if failed(info) {
			span.RecordError(info.Err)
			span.SetStatus(codes.Error, "lock not acquired: "+string(info.Reason))
		}
		span.End(trace.WithTimestamp(info.Start.Add(info.Elapsed)))
	}
}

// failed reports whether a Lock call ended without the lock because the
// nodes or locksmith failed, rather than because the key was held
// elsewhere or the caller gave up while it was. Contention is how a lock
// works, not an error.
func failed(info observe.NotAcquiredInfo) bool {
	switch info.Reason {
	case observe.ReasonHeld:
		return false
	case observe.ReasonCanceled:
		// The caller's context ended; the error holds the last attempt,
		// if one was made.
		var qe *redlock.QuorumError
		return errors.As(info.Err, &qe) && qe.Refused == 0 && len(qe.Errors) > 0
	}
	return true
}

func (r *recorder) extendRound(ctx context.Context, info observe.RoundInfo) {
	outcome := "ok"
	if !info.OK {
		outcome = "failed"
	}
	r.ins.extends.Add(ctx, 1, metric.WithAttributes(keyOutcome.String(outcome)))
	r.roundSpan(ctx, "locksmith.Extend", info, "extend not confirmed")
}

func (r *recorder) released(ctx context.Context, info observe.RoundInfo) {
	outcome := "confirmed"
	if !info.OK {
		outcome = "unconfirmed"
	}
	r.ins.holdDuration.Record(ctx, info.Held.Seconds(), metric.WithAttributes(keyOutcome.String(outcome)))
	r.roundSpan(ctx, "locksmith.Unlock", info, "release not confirmed")
}

// roundSpan records a finished round of Extend or Unlock as a span, from
// the round's start to its end.
func (r *recorder) roundSpan(ctx context.Context, name string, info observe.RoundInfo, failure string) {
	r.countNodeErrors(ctx, info)
	_, span := r.tracer.Start(ctx, name, trace.WithTimestamp(info.Start), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(roundAttrs(info), keyKeys.StringSlice(info.Keys), keyValuePrefix.String(info.Value))...))
	for ne := range failedNodes(info) {
		span.AddEvent("node_error", trace.WithTimestamp(info.Start.Add(info.Elapsed)), trace.WithAttributes(nodeErrorAttrs(ne)...))
	}
	if !info.OK {
		span.SetStatus(codes.Error, failure)
	}
	span.End(trace.WithTimestamp(info.Start.Add(info.Elapsed)))
}

func (r *recorder) lockLost(ctx context.Context, _ observe.LockLostInfo) {
	r.ins.lost.Add(ctx, 1)
}

// countNodeErrors counts the nodes that failed in a round.
func (r *recorder) countNodeErrors(ctx context.Context, info observe.RoundInfo) {
	for ne := range failedNodes(info) {
		r.ins.nodeErrors.Add(ctx, 1, metric.WithAttributes(keyNode.Int(ne.Node), keyOperation.String(info.Op)))
	}
}

func roundAttrs(info observe.RoundInfo) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		keyGranted.Int(info.Granted), keyRefused.Int(info.Refused), keyErrors.Int(len(info.Errors)),
		keyQuorum.Int(info.Quorum),
	}
	if info.Attempt > 0 {
		attrs = append(attrs, keyAttempt.Int(info.Attempt))
	}
	if redlock.Op(info.Op) != redlock.OpUnlock {
		attrs = append(attrs, keyValidity.Int64(info.Validity.Milliseconds()))
	}
	return attrs
}

// failedNodes yields the nodes that failed in a round: each of its Errors
// is a *redlock.NodeError.
func failedNodes(info observe.RoundInfo) iter.Seq[*redlock.NodeError] {
	return func(yield func(*redlock.NodeError) bool) {
		for _, err := range info.Errors {
			var ne *redlock.NodeError
			if errors.As(err, &ne) && !yield(ne) {
				return
			}
		}
	}
}

func nodeErrorAttrs(ne *redlock.NodeError) []attribute.KeyValue {
	return []attribute.KeyValue{keyNode.Int(ne.Node), attribute.String("exception.message", ne.Err.Error())}
}
