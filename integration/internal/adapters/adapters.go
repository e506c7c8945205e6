// Package adapters builds a driver.Conn to one Redis server through each of
// locksmith's adapter modules, so that every integration test can run the
// same checks over go-redis, redigo, rueidis and valkey-go:
//
//	for _, a := range adapters.All() {
//		t.Run(a.Name, func(t *testing.T) {
//			conn := a.Conn(t, node.Addr())
//			...
//		})
//	}
//
// The clients are configured as an application would configure them, with
// the client library's defaults except where an [Option] asks otherwise.
//
// # Errors
//
// [Adapter.Conn] fails the test when the client cannot be built; [Adapter.Dial]
// returns the error instead, for tests that expect a connection to be
// refused.
//
// # Concurrency
//
// [Adapter.Conn] must be called from the test's goroutine. The Conns it
// returns are safe for concurrent use.
package adapters

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	lsgoredis "github.com/locksmith-go/locksmith/driver/goredis"
	lsredigo "github.com/locksmith-go/locksmith/driver/redigo"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	lsvalkeygo "github.com/locksmith-go/locksmith/driver/valkeygo"
)

// Adapter is one of locksmith's adapter modules with the client it wraps.
type Adapter struct {
	// Name names the adapter in subtest names: "goredis", "redigo",
	// "rueidis" or "valkeygo".
	Name string
	// dial builds the client and its Conn; close releases the client.
	dial func(ctx context.Context, addr string, o options) (conn driver.Conn, close func(), err error)
}

// All returns the four adapters, in a fixed order.
func All() []Adapter {
	return []Adapter{
		{Name: "goredis", dial: dialGoRedis},
		{Name: "redigo", dial: dialRedigo},
		{Name: "rueidis", dial: dialRueidis},
		{Name: "valkeygo", dial: dialValkeyGo},
	}
}

// Option changes how a client is configured.
type Option func(*options)

type options struct {
	tls                *tls.Config
	username, password string
}

// WithTLS makes the client connect with TLS using cfg. Default: plain TCP.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls = cfg }
}

// WithAuth makes the client log in as username (empty: the default user)
// with password. Default: no authentication.
func WithAuth(username, password string) Option {
	return func(o *options) { o.username, o.password = username, password }
}

// dialTimeout bounds connecting to a server that should be up; it ends a
// hang, it is not an assertion about speed.
const dialTimeout = 10 * time.Second

// Conn returns a Conn to the server at addr through the adapter, and closes
// its client when the test ends. It fails the test if the client cannot be
// built (rueidis connects at once and fails on a server that refuses it).
func (a Adapter) Conn(t testing.TB, addr string, opts ...Option) driver.Conn {
	t.Helper()
	conn, err := a.Dial(t, addr, opts...)
	if err != nil {
		t.Fatalf("%s: client for %s: %v", a.Name, addr, err)
	}
	return conn
}

// Dial is [Adapter.Conn] returning the error instead of failing the test.
// A client that was built is closed when the test ends.
func (a Adapter) Dial(t testing.TB, addr string, opts ...Option) (driver.Conn, error) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn, closeClient, err := a.dial(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(closeClient)
	return conn, nil
}

func dialGoRedis(_ context.Context, addr string, o options) (driver.Conn, func(), error) {
	// ContextTimeoutEnabled, as the adapter's doc advises: the Conn then
	// honours its deadlines (driver.DeadlineHonorer), so the suites run
	// the core's inline calls and drivertest's HonorsDeadline rule; the
	// other adapters run every call on a goroutine of the core's.
	client := goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		TLSConfig:             o.tls,
		Username:              o.username,
		Password:              o.password,
		ContextTimeoutEnabled: true,
	})
	return lsgoredis.New(client), func() { _ = client.Close() }, nil
}

func dialRedigo(_ context.Context, addr string, o options) (driver.Conn, func(), error) {
	dialOpts := []redigo.DialOption{
		redigo.DialConnectTimeout(dialTimeout),
	}
	if o.tls != nil {
		dialOpts = append(dialOpts, redigo.DialUseTLS(true), redigo.DialTLSConfig(o.tls))
	}
	if o.username != "" {
		dialOpts = append(dialOpts, redigo.DialUsername(o.username))
	}
	if o.password != "" {
		dialOpts = append(dialOpts, redigo.DialPassword(o.password))
	}
	pool := &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr, dialOpts...)
		},
		MaxIdle:     8,
		IdleTimeout: time.Minute,
	}
	return lsredigo.New(pool), func() { _ = pool.Close() }, nil
}

func dialRueidis(_ context.Context, addr string, o options) (driver.Conn, func(), error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr},
		TLSConfig:   o.tls,
		Username:    o.username,
		Password:    o.password,
	})
	if err != nil {
		return nil, nil, err
	}
	return lsrueidis.New(client), client.Close, nil
}

// dialValkeyGo sets ForceSingleClient, as driver/valkeygo advises for one
// server; the client it returns along with an error is closed.
func dialValkeyGo(_ context.Context, addr string, o options) (driver.Conn, func(), error) {
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		TLSConfig:         o.tls,
		Username:          o.username,
		Password:          o.password,
	})
	if err != nil {
		if client != nil {
			client.Close()
		}
		return nil, nil, err
	}
	return lsvalkeygo.New(client), client.Close, nil
}
