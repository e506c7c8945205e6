package conformance

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	lsvalkeygo "github.com/locksmith-go/locksmith/driver/valkeygo"
)

// valkeygoFaults sets the hooks of the StalledDial and NotifyQuiet rules
// for the valkeygo adapter over the server at addr. Its clients set
// ForceSingleClient, as driver/valkeygo advises for one server, so that
// valkey.NewClient returns a client for the stalled address too.
func valkeygoFaults(f *drivertest.Faults, addr string) {
	f.StalledDial = func(t *testing.T) (driver.Conn, func()) {
		hole := newFullBacklog(t)
		return valkeygoConn(t, valkey.ClientOption{InitAddress: []string{hole.addr}}), hole.release
	}
	f.QuietNotifier = func(t *testing.T) (driver.Conn, time.Duration, func() int) {
		var dials atomic.Int64
		conn := valkeygoConn(t, valkey.ClientOption{
			InitAddress:      []string{addr},
			ConnWriteTimeout: quietReadTimeout,
			DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				dials.Add(1)
				return d.DialContext(ctx, "tcp", addr)
			},
		})
		return conn, quietFor, func() int { return int(dials.Load()) }
	}
}

// valkeygoConn wraps a client built from opt with ForceSingleClient,
// closed when the test ends; the error of a server that does not answer
// yet is no failure.
func valkeygoConn(t *testing.T, opt valkey.ClientOption) driver.Conn {
	t.Helper()
	opt.ForceSingleClient = true
	client, err := valkey.NewClient(opt)
	if client == nil {
		t.Fatalf("valkey.NewClient: %v", err)
	}
	t.Cleanup(client.Close)
	return lsvalkeygo.New(client)
}
