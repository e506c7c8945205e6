package otel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	lsotel "github.com/locksmith-go/locksmith/otel"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup is a Client on in-process nodes behind fault injectors, observed
// into an in-memory metric reader and span recorder.
type setup struct {
	servers []*miniredis.Miniredis
	faults  []*faults.Conn
	client  *redlock.Client
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	tracer  *sdktrace.TracerProvider
}

func newSetup(t *testing.T, n int, opts ...redlock.Option) *setup {
	t.Helper()
	s := &setup{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	s.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	obs, err := lsotel.NewObserver(
		lsotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))),
		lsotel.WithTracerProvider(s.tracer))
	if err != nil {
		t.Fatalf("NewObserver: %v", err)
	}
	var conns []driver.Conn
	for range n {
		srv := miniredis.RunT(t)
		rc := resp.Dial(srv.Addr())
		t.Cleanup(func() { rc.Close() })
		f := faults.Wrap(rc)
		s.servers = append(s.servers, srv)
		s.faults = append(s.faults, f)
		conns = append(conns, f)
	}
	opts = append([]redlock.Option{redlock.WithNodeTimeout(250 * time.Millisecond), redlock.WithObserver(obs)}, opts...)
	s.client, err = redlock.New(conns, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// points returns every data point as "name{attrs}" mapped to its value:
// the sum of a counter, the count of a histogram (with ".count") and its
// sum (with ".sum").
func (s *setup) points(t *testing.T) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]float64{}
	name := func(m metricdata.Metrics, attrs attribute.Set) string {
		return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != lsotel.ScopeName {
			t.Errorf("metrics in scope %q, want %q", sm.Scope.Name, lsotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					out[name(m, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[int64]:
				for _, p := range data.DataPoints {
					out[name(m, p.Attributes)+".count"] = float64(p.Count)
					out[name(m, p.Attributes)+".sum"] = float64(p.Sum)
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					out[name(m, p.Attributes)+".count"] = float64(p.Count)
				}
			default:
				t.Errorf("metric %s has unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func wantPoints(t *testing.T, got, want map[string]float64) {
	t.Helper()
	var diffs []string
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %s = %v", k, got[k]))
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			diffs = append(diffs, fmt.Sprintf("%s = %v (present %t), want %v", k, g, ok, v))
		}
	}
	slices.Sort(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

// spanLine describes an ended span: name, status, event names.
func spanLine(s sdktrace.ReadOnlySpan) string {
	var events []string
	for _, e := range s.Events() {
		events = append(events, e.Name)
	}
	return fmt.Sprintf("%s %s [%s]", s.Name(), s.Status().Code, strings.Join(events, " "))
}

func (s *setup) spanLines() []string {
	var lines []string
	for _, sp := range s.spans.Ended() {
		lines = append(lines, spanLine(sp))
	}
	return lines
}

// wantSpans fails unless got is want, and reports whether it is.
func wantSpans(t *testing.T, got, want []string) bool {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("spans:\n got  %q\n want %q", got, want)
		return false
	}
	return true
}

// noValue fails if any span attribute or event attribute holds value.
func (s *setup) noValue(t *testing.T, value string) {
	t.Helper()
	check := func(where string, attrs []attribute.KeyValue) {
		for _, a := range attrs {
			if strings.Contains(a.Value.String(), value) {
				t.Errorf("%s: attribute %s shows the lock value", where, a.Key)
			}
		}
	}
	for _, sp := range s.spans.Ended() {
		check(sp.Name(), sp.Attributes())
		for _, e := range sp.Events() {
			check(sp.Name()+"/"+e.Name, e.Attributes)
		}
	}
}

func TestLockExtendUnlock(t *testing.T) {
	s := newSetup(t, 3)
	ctx, parent := s.tracer.Tracer("test").Start(context.Background(), "request")
	l, err := s.client.Lock(ctx, "k", time.Second)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	parent.End()

	wantPoints(t, s.points(t), map[string]float64{
		"locksmith.lock.acquire.duration{locksmith.outcome=acquired}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=acquired}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=acquired}.sum":   1,
		"locksmith.lock.acquires{locksmith.outcome=acquired}":               1,
		"locksmith.lock.extends{locksmith.outcome=ok}":                      1,
		"locksmith.lock.hold.duration{locksmith.outcome=confirmed}.count":   1,
	})
	wantSpans(t, s.spanLines(), []string{
		"locksmith.Lock Unset [attempt]",
		"locksmith.Extend Unset []",
		"locksmith.Unlock Unset []",
		"request Unset []",
	})
	for _, sp := range s.spans.Ended()[:3] {
		if got, want := sp.Parent().SpanID(), parent.SpanContext().SpanID(); got != want {
			t.Errorf("span %s has parent %v, want the caller's span %v", sp.Name(), got, want)
		}
		if !slices.Contains(sp.Attributes(), attribute.StringSlice("locksmith.keys", []string{"k"})) {
			t.Errorf("span %s lacks locksmith.keys: %v", sp.Name(), sp.Attributes())
		}
	}
	s.noValue(t, l.Value())
}

func TestMajorityFailing(t *testing.T) {
	s := newSetup(t, 3)
	s.faults[0].Set(faults.Fail)
	s.faults[2].Set(faults.Fail)
	if _, err := s.client.TryLock(context.Background(), "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 of 3 nodes failing: got %v", err)
	}
	wantPoints(t, s.points(t), map[string]float64{
		"locksmith.lock.acquire.duration{locksmith.outcome=node_errors}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=node_errors}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=node_errors}.sum":   1,
		"locksmith.lock.acquires{locksmith.outcome=node_errors}":               1,
		"locksmith.node.errors{locksmith.node=0,locksmith.operation=lock}":     1,
		"locksmith.node.errors{locksmith.node=2,locksmith.operation=lock}":     1,
	})
	// The failed attempt's events, then the error recorded on the span.
	wantSpans(t, s.spanLines(), []string{"locksmith.Lock Error [node_error node_error attempt exception]"})
	if sp := s.spans.Ended()[0]; sp.Status().Code != codes.Error || sp.Status().Description != "lock not acquired: node_errors" {
		t.Errorf("status %v", sp.Status())
	}
}

func TestContentionAndLoss(t *testing.T) {
	s := newSetup(t, 3)
	ctx := context.Background()
	err := s.client.Do(ctx, "k", time.Second, func(ctx context.Context) error {
		// A rival is refused while the lock is held.
		if _, err := s.client.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryLock of a held key: got %v", err)
		}
		// Then the lock vanishes from every node, and the first renewal
		// finds it gone.
		for _, srv := range s.servers {
			srv.Del("k")
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do: got %v, want ErrLockLost", err)
	}
	wantPoints(t, s.points(t), map[string]float64{
		"locksmith.lock.acquire.duration{locksmith.outcome=acquired}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=acquired}.count": 1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=acquired}.sum":   1,
		"locksmith.lock.acquires{locksmith.outcome=acquired}":               1,
		"locksmith.lock.acquire.duration{locksmith.outcome=held}.count":     1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=held}.count":     1,
		"locksmith.lock.acquire.attempts{locksmith.outcome=held}.sum":       1,
		"locksmith.lock.acquires{locksmith.outcome=held}":                   1,
		"locksmith.lock.extends{locksmith.outcome=failed}":                  1,
		"locksmith.lock.lost{}": 1,
		"locksmith.lock.hold.duration{locksmith.outcome=unconfirmed}.count": 1,
	})
	// The rival's span is no error: it found the key held.
	if !wantSpans(t, s.spanLines(), []string{
		"locksmith.Lock Unset [attempt]",
		"locksmith.Lock Unset [attempt]",
		"locksmith.Extend Error []",
		"locksmith.Unlock Error []",
	}) {
		t.FailNow()
	}
	if attrs := s.spans.Ended()[1].Attributes(); !slices.Contains(attrs, attribute.String("locksmith.outcome", "held")) {
		t.Errorf("the rival's span attributes %v lack locksmith.outcome=held", attrs)
	}
}

// TestCallerGivesUp ends Lock calls by cancelling their context after the
// first attempt: on a held key the span is no error, with failing nodes it
// is.
func TestCallerGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name     string
		setup    func(*setup)
		wantSpan string
	}{
		{"held", func(s *setup) {
			for _, srv := range s.servers {
				srv.Set("k", "another-owner")
			}
		}, "locksmith.Lock Unset [attempt]"},
		{"failing nodes", func(s *setup) {
			s.faults[0].Set(faults.Fail)
			s.faults[1].Set(faults.Fail)
		}, "locksmith.Lock Error [node_error node_error attempt exception]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			giveUp := redlock.WithObserver(observe.Observer{
				AttemptDone: func(context.Context, observe.RoundInfo) { cancel() },
			})
			s := newSetup(t, 3, giveUp)
			tt.setup(s)
			if _, err := s.client.Lock(ctx, "k", time.Second); !errors.Is(err, context.Canceled) {
				t.Fatalf("Lock cancelled after its first attempt: got %v", err)
			}
			if !wantSpans(t, s.spanLines(), []string{tt.wantSpan}) {
				t.FailNow()
			}
			if attrs := s.spans.Ended()[0].Attributes(); !slices.Contains(attrs, attribute.String("locksmith.outcome", "canceled")) {
				t.Errorf("span attributes %v lack locksmith.outcome=canceled", attrs)
			}
		})
	}
}

func TestExtendNodeErrorEvents(t *testing.T) {
	s := newSetup(t, 3)
	ctx := context.Background()
	// A lock on several keys, whose rounds wait for every node: a round
	// on one key returns once two nodes have granted, and node 1's
	// failure, answered after that, would be in none of its events.
	l, err := s.client.LockMulti(ctx, []string{"k", "k2"}, 5*time.Second)
	if err != nil {
		t.Fatalf("LockMulti: %v", err)
	}
	s.faults[1].Set(faults.Fail)
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend with 1 of 3 nodes failing: %v", err)
	}
	s.faults[1].Set(faults.Pass)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if !wantSpans(t, s.spanLines(), []string{
		"locksmith.Lock Unset [attempt]",
		"locksmith.Extend Unset [node_error]",
		"locksmith.Unlock Unset []",
	}) {
		t.FailNow()
	}
	ev := s.spans.Ended()[1].Events()[0]
	if !slices.Contains(ev.Attributes, attribute.Int("locksmith.node", 1)) {
		t.Errorf("node_error event attributes %v lack locksmith.node=1", ev.Attributes)
	}
	if got := s.points(t)["locksmith.node.errors{locksmith.node=1,locksmith.operation=extend}"]; got != 1 {
		t.Errorf("extend node errors of node 1: got %v, want 1", got)
	}
}

func TestNewObserverRejectsNil(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  lsotel.Option
		want string
	}{
		{"nil option", nil, "locksmith/otel: nil Option"},
		{"nil meter provider", lsotel.WithMeterProvider(nil), "locksmith/otel: nil MeterProvider"},
		{"nil tracer provider", lsotel.WithTracerProvider(nil), "locksmith/otel: nil TracerProvider"},
	} {
		if _, err := lsotel.NewObserver(tt.opt); err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
