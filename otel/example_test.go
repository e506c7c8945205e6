package otel_test

import (
	"context"
	"log"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/locksmith-go/locksmith/driver"
	lsotel "github.com/locksmith-go/locksmith/otel"
	"github.com/locksmith-go/locksmith/redlock"
)

// A program sets up its providers with exporters (OTLP, Prometheus, ...)
// and passes them, or sets them globally and calls NewObserver without
// options.
func ExampleNewObserver() {
	var conns []driver.Conn // one per Redis node, from a driver adapter

	meters := sdkmetric.NewMeterProvider( /* sdkmetric.WithReader(...) */ )
	tracers := sdktrace.NewTracerProvider( /* sdktrace.WithBatcher(...) */ )
	defer meters.Shutdown(context.Background())
	defer tracers.Shutdown(context.Background())

	obs, err := lsotel.NewObserver(lsotel.WithMeterProvider(meters), lsotel.WithTracerProvider(tracers))
	if err != nil {
		log.Fatal(err)
	}
	client, err := redlock.New(conns, redlock.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = client.Lock(context.Background(), "invoice:42", 10*time.Second)
}
