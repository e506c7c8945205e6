package drivertest_test

import (
	"os"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
)

// dialAdapter stands for an adapter's constructor in this example: it would
// create a client for addr, wrap it in the adapter's Conn, and return a
// function that closes the client.
func dialAdapter(t *testing.T, addr string) (driver.Conn, func()) {
	t.Skipf("this example has no adapter to dial %s with", addr)
	return nil, nil
}

// An adapter's conformance test, as it would appear in the adapter's
// _test.go file. It checks the adapter against the Redis server named by an
// environment variable.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		addr := os.Getenv("LOCKSMITH_REDIS_ADDR")
		if addr == "" {
			t.Skip("LOCKSMITH_REDIS_ADDR is not set")
		}
		drivertest.Run(t, func(t *testing.T) driver.Conn {
			conn, closeClient := dialAdapter(t, addr)
			t.Cleanup(closeClient)
			return conn
		})
	}
	_ = testConformance
}

// An adapter tested against an in-process stand-in for Redis that cannot run
// one of the rules skips that rule, and only that one, with a reason.
func ExampleSkip() {
	testConformanceInProcess := func(t *testing.T) {
		drivertest.Run(t, func(t *testing.T) driver.Conn {
			conn, closeClient := dialAdapter(t, "in-process")
			t.Cleanup(closeClient)
			return conn
		}, drivertest.Skip("ContextDoneDuringCall", "the stand-in cannot keep a script running"))
	}
	_ = testConformanceInProcess
}

// stopServer stands for a way to stop the test's server as SIGSTOP does,
// and go on again with the function it returns.
func stopServer(t *testing.T) (resume func()) {
	t.Skip("this example has no server to stop")
	return func() {}
}

// An adapter's conformance test with the hooks of the rules about stalled
// nodes and node identity. Each hook left nil skips the rules that need it.
func ExampleWithFaults() {
	testConformance := func(t *testing.T) {
		addr := os.Getenv("LOCKSMITH_REDIS_ADDR")
		otherAddr := os.Getenv("LOCKSMITH_OTHER_REDIS_ADDR")
		newConn := func(t *testing.T) driver.Conn {
			conn, closeClient := dialAdapter(t, addr)
			t.Cleanup(closeClient)
			return conn
		}
		drivertest.Run(t, newConn,
			drivertest.WithFaults(drivertest.Faults{
				Pause: stopServer,
			}),
			drivertest.WithIdentity(drivertest.Identity{
				Other: func(t *testing.T) driver.Conn {
					conn, closeClient := dialAdapter(t, otherAddr)
					t.Cleanup(closeClient)
					return conn
				},
			}))
	}
	_ = testConformance
}
