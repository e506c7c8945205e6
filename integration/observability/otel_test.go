package observability

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	lsotel "github.com/locksmith-go/locksmith/otel"
	"github.com/locksmith-go/locksmith/redlock"
)

// collect returns the value of every counter data point and the count of
// every histogram data point, keyed by metric name and attributes.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			key := func(attrs attribute.Set) string {
				return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					got[key(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[int64]:
				for _, p := range data.DataPoints {
					got[key(p.Attributes)+" count"] = int64(p.Count)
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					got[key(p.Attributes)+" count"] = int64(p.Count)
				}
			default:
				t.Errorf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return got
}

// TestOTelMetricsAndSpans locks, extends, contends and unlocks on three
// servers, one of which is stopped half-way, and checks every metric and
// span the otel module records.
func TestOTelMetricsAndSpans(t *testing.T) {
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			nodes := redisnode.Start(t, 3, redisnode.Config{})
			reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
			obs, err := lsotel.NewObserver(
				lsotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
				lsotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))
			if err != nil {
				t.Fatalf("NewObserver: %v", err)
			}
			client := locktest.Client(t, a, nodes, redlock.WithObserver(obs))
			ctx := context.Background()
			key := locktest.Key(t)

			l, err := client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if err := l.Extend(ctx, locktest.TTL); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if _, err := client.TryLock(ctx, key, locktest.TTL); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("TryLock of a held key: got %v, want ErrNotAcquired", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}

			nodes[2].Stop(t)
			l, err = client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock with 2 of 3 nodes up: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock with 2 of 3 nodes up: %v", err)
			}

			got := collect(t, reader)
			want := map[string]int64{
				"locksmith.lock.acquire.duration{locksmith.outcome=acquired} count": 2,
				"locksmith.lock.acquire.duration{locksmith.outcome=held} count":     1,
				"locksmith.lock.acquire.attempts{locksmith.outcome=acquired} count": 2,
				"locksmith.lock.acquire.attempts{locksmith.outcome=held} count":     1,
				"locksmith.lock.acquires{locksmith.outcome=acquired}":               2,
				"locksmith.lock.acquires{locksmith.outcome=held}":                   1,
				"locksmith.lock.extends{locksmith.outcome=ok}":                      1,
				"locksmith.lock.hold.duration{locksmith.outcome=confirmed} count":   2,
			}
			// A round returns once the two live nodes decided it: the
			// stopped node's error is recorded when it came first, and
			// then once.
			for _, op := range []string{"lock", "unlock"} {
				k := "locksmith.node.errors{locksmith.node=2,locksmith.operation=" + op + "}"
				if n, ok := got[k]; ok {
					if n != 1 {
						t.Errorf("%s = %d, want 1 or none", k, n)
					}
					want[k] = n
				}
			}
			if !maps.Equal(got, want) {
				for _, k := range slices.Sorted(maps.Keys(got)) {
					t.Logf("got  %s = %d", k, got[k])
				}
				for _, k := range slices.Sorted(maps.Keys(want)) {
					t.Logf("want %s = %d", k, want[k])
				}
				t.Errorf("recorded metrics differ from the expected ones")
			}

			var names []string
			for _, s := range spans.Ended() {
				names = append(names, s.Name())
			}
			wantNames := []string{"locksmith.Lock", "locksmith.Extend", "locksmith.Lock", "locksmith.Unlock", "locksmith.Lock", "locksmith.Unlock"}
			if !slices.Equal(names, wantNames) {
				t.Errorf("spans: got %q, want %q", names, wantNames)
			}
			if ended := spans.Ended(); len(ended) == len(wantNames) {
				if n := len(ended[5].Events()); n > 1 {
					t.Errorf("the Unlock span with node 2 stopped has %d events, want at most 1 node_error", n)
				}
			}
			locktest.RequireNoKey(t, nodes[:2], key)
		})
	}
}
