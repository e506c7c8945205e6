package bench

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	goredisdriver "github.com/locksmith-go/locksmith/driver/goredis"
	redigodriver "github.com/locksmith-go/locksmith/driver/redigo"
	rueidisdriver "github.com/locksmith-go/locksmith/driver/rueidis"
	valkeygodriver "github.com/locksmith-go/locksmith/driver/valkeygo"
	"github.com/locksmith-go/locksmith/internal/scripts"
	"github.com/locksmith-go/locksmith/redlock"
)

// ttl is the lock TTL of every contender. With it, locksmith's default
// per-node timeout (5% of the TTL, at most 1 s) and redsync's (TTL × its
// default timeout factor 0.05) are both 500 ms.
const ttl = 10 * time.Second

// errNotAcquired is what a contender reports when the lock is held
// elsewhere, whatever its library calls that.
var errNotAcquired = errors.New("bench: lock held elsewhere")

// A contender takes locks through one library.
type contender interface {
	// hold acquires the lock on key, calls fn while holding it, then
	// releases it. With wait false it makes a single attempt; with wait
	// true it retries with the library's default retry settings. A lock
	// that another owner holds is reported with an error matching
	// errNotAcquired.
	hold(ctx context.Context, key string, wait bool, fn func()) error
}

// A contenderSpec makes one kind of contender over a set of nodes.
type contenderSpec struct {
	name string
	// singleNode is set for libraries that lock on one node only.
	singleNode bool
	// waits is set for contenders whose hold supports wait.
	waits bool
	// new returns a contender over the servers at addrs, with clients of
	// its own, closed when tb ends.
	new func(tb testing.TB, addrs []string) contender
}

func (s contenderSpec) supports(nodes int) bool { return !s.singleNode || nodes == 1 }

// contenders are all the contenders, in the order of the benchmark output.
var contenders = []contenderSpec{
	{name: "locksmith", waits: true, new: newLocksmithGoredis},
	{name: "locksmith-redigo", waits: true, new: newLocksmithRedigo},
	{name: "locksmith-rueidis", waits: true, new: newLocksmithRueidis},
	{name: "locksmith-valkeygo", waits: true, new: newLocksmithValkeyGo},
	{name: "redsync", waits: true, new: newRedsync},
	{name: "redsync-redigo", waits: true, new: newRedsyncRedigo},
	{name: "redsync-rueidis", waits: true, new: newRedsyncRueidis},
	{name: "redislock", singleNode: true, new: newRedislock},
	{name: "raw", new: newRaw},
	{name: "raw-script", new: newRawScript},
}

// poolSize is the connection pool size of every client, per node: go-redis's
// own default, written out so the other clients can match it.
var poolSize = 10 * runtime.GOMAXPROCS(0)

// goredisOptions are the go-redis client options every contender that uses
// go-redis shares. The handshake extras (CLIENT SETINFO, maintenance
// notifications) are turned off: they cost only at connection time, but
// Redis 7.0 answers them with errors. ContextTimeoutEnabled makes go-redis
// bound socket reads and writes by the context's deadline, which lets
// locksmith's adapter run a node's command without a goroutine of its own;
// for every contender it also means that a deadline set by the library
// (per-node timeouts) ends a command on time rather than after the
// client's ReadTimeout.
func goredisOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		PoolSize:                 poolSize,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// goredisClients returns one go-redis client per address, closed when tb
// ends.
func goredisClients(tb testing.TB, addrs []string) []*redis.Client {
	tb.Helper()
	clients := make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		client := redis.NewClient(goredisOptions(addr))
		tb.Cleanup(func() { client.Close() })
		clients[i] = client
	}
	return clients
}

// locksmith

type locksmithContender struct {
	client *redlock.Client
	ttl    time.Duration
}

// newLocksmith returns locksmith over conns, taking locks for ttl.
func newLocksmith(tb testing.TB, conns []driver.Conn, ttl time.Duration) contender {
	tb.Helper()
	client, err := redlock.New(conns, redlock.WithReleaseNotifications(true))
	if err != nil {
		tb.Fatal(err)
	}
	settleAtEnd(tb, client)
	return locksmithContender{client, ttl}
}

// settleAtEnd closes client when tb ends, before the Redis clients under
// it are closed (their cleanups were registered first): Close waits for
// the requests that client's calls left running once a quorum had decided.
func settleAtEnd(tb testing.TB, client *redlock.Client) {
	tb.Cleanup(func() {
		if err := client.Close(context.Background()); err != nil {
			tb.Error(err)
		}
	})
}

func newLocksmithGoredis(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return newLocksmith(tb, goredisConns(goredisClients(tb, addrs)), ttl)
}

func goredisConns(clients []*redis.Client) []driver.Conn {
	conns := make([]driver.Conn, len(clients))
	for i, client := range clients {
		conns[i] = goredisdriver.New(client)
	}
	return conns
}

func newLocksmithRedigo(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return newLocksmith(tb, redigoConns(tb, addrs), ttl)
}

// redigoConns returns a redigo adapter per address, over redigoPools.
func redigoConns(tb testing.TB, addrs []string) []driver.Conn {
	var conns []driver.Conn
	for _, pool := range redigoPools(tb, addrs) {
		conns = append(conns, redigodriver.New(pool))
	}
	return conns
}

// redigoPools returns a redigo pool per address, of poolSize connections
// that callers wait for, closed when tb ends.
func redigoPools(tb testing.TB, addrs []string) []*redigo.Pool {
	var pools []*redigo.Pool
	for _, addr := range addrs {
		pool := &redigo.Pool{
			MaxIdle:   poolSize,
			MaxActive: poolSize,
			Wait:      true,
			DialContext: func(ctx context.Context) (redigo.Conn, error) {
				return redigo.DialContext(ctx, "tcp", addr)
			},
		}
		tb.Cleanup(func() { pool.Close() })
		pools = append(pools, pool)
	}
	return pools
}

func newLocksmithRueidis(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return newLocksmith(tb, rueidisConns(tb, addrs), ttl)
}

// rueidisConns returns a rueidis adapter per address, over rueidisClients.
func rueidisConns(tb testing.TB, addrs []string) []driver.Conn {
	tb.Helper()
	var conns []driver.Conn
	for _, client := range rueidisClients(tb, addrs) {
		conns = append(conns, rueidisdriver.New(client))
	}
	return conns
}

// rueidisClients returns a rueidis client per address, closed when tb
// ends. rueidis pipelines commands over one connection per node;
// client-side caching is not used by locks.
func rueidisClients(tb testing.TB, addrs []string) []rueidis.Client {
	tb.Helper()
	var clients []rueidis.Client
	for _, addr := range addrs {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:  []string{addr},
			DisableCache: true,
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(client.Close)
		clients = append(clients, client)
	}
	return clients
}

func newLocksmithValkeyGo(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return newLocksmith(tb, valkeyGoConns(tb, addrs), ttl)
}

// valkeyGoConns returns a valkeygo adapter per address, over a valkey-go
// client made as rueidisClients makes a rueidis client (valkey-go is its
// fork), for one server (ForceSingleClient), closed when tb ends.
func valkeyGoConns(tb testing.TB, addrs []string) []driver.Conn {
	tb.Helper()
	var conns []driver.Conn
	for _, addr := range addrs {
		client, err := valkey.NewClient(valkey.ClientOption{
			InitAddress:       []string{addr},
			DisableCache:      true,
			ForceSingleClient: true,
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(client.Close)
		conns = append(conns, valkeygodriver.New(client))
	}
	return conns
}

func (c locksmithContender) hold(ctx context.Context, key string, wait bool, fn func()) error {
	var lock *redlock.Lock
	var err error
	if wait {
		lock, err = c.client.Lock(ctx, key, c.ttl)
	} else {
		lock, err = c.client.TryLock(ctx, key, c.ttl)
	}
	if err != nil {
		var qe *redlock.QuorumError
		if errors.As(err, &qe) && qe.Refused >= qe.Quorum {
			return fmt.Errorf("%w: %w", errNotAcquired, err)
		}
		return err
	}
	fn()
	return lock.Unlock(ctx)
}

// redsync

type redsyncContender struct {
	rs   *redsync.Redsync
	opts []redsync.Option // made once: each call would allocate
}

func newRedsync(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return newRedsyncOver(goredisClients(tb, addrs), redsync.WithExpiry(ttl))
}

// newRedsyncOver returns redsync over clients, making its mutexes with
// opts.
func newRedsyncOver(clients []*redis.Client, opts ...redsync.Option) contender {
	var pools []redsyncredis.Pool
	for _, client := range clients {
		pools = append(pools, redsyncgoredis.NewPool(client))
	}
	return redsyncContender{rs: redsync.New(pools...), opts: opts}
}

// newRedsyncRedigo returns redsync over its redigo pool, on the same redigo
// pools as locksmith-redigo: the peer of locksmith-redigo on one client.
func newRedsyncRedigo(tb testing.TB, addrs []string) contender {
	tb.Helper()
	var pools []redsyncredis.Pool
	for _, pool := range redigoPools(tb, addrs) {
		pools = append(pools, redsyncredigo.NewPool(pool))
	}
	return redsyncContender{rs: redsync.New(pools...), opts: []redsync.Option{redsync.WithExpiry(ttl)}}
}

// newRedsyncRueidis returns redsync over its rueidis pool, on rueidis
// clients made as locksmith-rueidis's are: the peer of locksmith-rueidis on
// one client.
func newRedsyncRueidis(tb testing.TB, addrs []string) contender {
	tb.Helper()
	var pools []redsyncredis.Pool
	for _, client := range rueidisClients(tb, addrs) {
		pools = append(pools, redsyncrueidis.NewPool(rueidiscompat.NewAdapter(client)))
	}
	return redsyncContender{rs: redsync.New(pools...), opts: []redsync.Option{redsync.WithExpiry(ttl)}}
}

func (c redsyncContender) hold(ctx context.Context, key string, wait bool, fn func()) error {
	mutex := c.rs.NewMutex(key, c.opts...)
	var err error
	if wait {
		err = mutex.LockContext(ctx)
	} else {
		err = mutex.TryLockContext(ctx)
	}
	if err != nil {
		var taken *redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			return fmt.Errorf("%w: %w", errNotAcquired, err)
		}
		return err
	}
	fn()
	ok, err := mutex.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock not confirmed by a quorum")
	}
	return err
}

// redislock

type redislockContender struct {
	client *redislock.Client
}

func newRedislock(tb testing.TB, addrs []string) contender {
	tb.Helper()
	if len(addrs) != 1 {
		tb.Fatalf("redislock locks on one node, got %d", len(addrs))
	}
	return redislockContender{redislock.New(goredisClients(tb, addrs)[0])}
}

func (c redislockContender) hold(ctx context.Context, key string, wait bool, fn func()) error {
	if wait {
		return errors.New("bench: the redislock contender makes single attempts only")
	}
	// nil options: one attempt, no retry.
	lock, err := c.client.Obtain(ctx, key, ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("%w: %w", errNotAcquired, err)
	}
	if err != nil {
		return err
	}
	fn()
	return lock.Release(ctx)
}

// raw: the floor

// rawValue is the raw floor's lock value. A real lock needs a fresh random
// value; the floor leaves that cost out.
const rawValue = "raw"

type rawContender struct {
	clients []*redis.Client
	// acquire sets key on one node if it is free and reports whether it
	// did; release deletes key there.
	acquire func(ctx context.Context, client *redis.Client, key string) (bool, error)
	release func(ctx context.Context, client *redis.Client, key string) error
}

func newRaw(tb testing.TB, addrs []string) contender {
	tb.Helper()
	return rawContender{
		clients: goredisClients(tb, addrs),
		acquire: func(ctx context.Context, client *redis.Client, key string) (bool, error) {
			return client.SetNX(ctx, key, rawValue, ttl).Result()
		},
		release: func(ctx context.Context, client *redis.Client, key string) error {
			return client.Del(ctx, key).Err()
		},
	}
}

// raw-script: the floor of a lock taken with scripts

// rawScriptInstances numbers the raw-script contenders made.
var rawScriptInstances atomic.Int64

// newRawScript returns the raw floor with locksmith's own acquire and
// release scripts in place of SET NX and DEL, sent with EVALSHA and no
// library: what Redis costs to run them, next to the plain commands.
func newRawScript(tb testing.TB, addrs []string) contender {
	tb.Helper()
	clients := goredisClients(tb, addrs)
	load := func(source string) string {
		// Every node returns the same digest: the SHA-1 of the source.
		var digest string
		for _, client := range clients {
			d, err := client.ScriptLoad(context.Background(), source).Result()
			if err != nil {
				tb.Fatal(err)
			}
			digest = d
		}
		return digest
	}
	acquire, release := load(scripts.Acquire.Source()), load(scripts.Release.Source())
	ttlArg := strconv.FormatInt(ttl.Milliseconds(), 10)
	// The acquire script grants a lock that already holds the caller's
	// value, so each instance needs a value of its own for two instances
	// to exclude each other; it is still made once, not per lock.
	value := rawValue + ":" + strconv.FormatInt(rawScriptInstances.Add(1), 10)
	return rawContender{
		clients: clients,
		acquire: func(ctx context.Context, client *redis.Client, key string) (bool, error) {
			n, err := client.EvalSha(ctx, acquire, []string{key}, value, ttlArg).Int()
			return n == 1, err
		},
		release: func(ctx context.Context, client *redis.Client, key string) error {
			return client.EvalSha(ctx, release, []string{key}, value).Err()
		},
	}
}

func (c rawContender) hold(ctx context.Context, key string, wait bool, fn func()) error {
	if wait {
		return errors.New("bench: the raw contender makes single attempts only")
	}
	if len(c.clients) == 1 {
		return c.holdOne(ctx, key, fn)
	}
	var r rawRound
	c.each(func(i int, client *redis.Client) {
		ok, err := c.acquire(ctx, client, key)
		r.fail(err)
		if ok {
			r.set.Or(1 << i)
		}
	})
	// Only the keys this round set are deleted: the others belong to
	// another owner.
	release := func(i int, client *redis.Client) {
		if r.set.Load()&(1<<i) != 0 {
			r.fail(c.release(ctx, client, key))
		}
	}
	if bits.OnesCount32(r.set.Load()) <= len(c.clients)/2 {
		c.each(release)
		if err := r.err(); err != nil {
			return err
		}
		return errNotAcquired
	}
	fn()
	c.each(release)
	return r.err()
}

// rawRound is what the nodes of one raw fan-out answered.
type rawRound struct {
	set     atomic.Uint32 // bit i: node i set the key
	failure atomic.Pointer[error]
}

func (r *rawRound) fail(err error) {
	if err != nil {
		r.failure.Store(&err)
	}
}

func (r *rawRound) err() error {
	if err := r.failure.Load(); err != nil {
		return *err
	}
	return nil
}

func (c rawContender) holdOne(ctx context.Context, key string, fn func()) error {
	client := c.clients[0]
	ok, err := c.acquire(ctx, client, key)
	if err != nil {
		return err
	}
	if !ok {
		return errNotAcquired
	}
	fn()
	return c.release(ctx, client, key)
}

// each calls do for every client at once, the first on the calling
// goroutine, and returns when all calls have.
func (c rawContender) each(do func(node int, client *redis.Client)) {
	var wg sync.WaitGroup
	for i, client := range c.clients[1:] {
		wg.Go(func() { do(i+1, client) })
	}
	do(0, c.clients[0])
	wg.Wait()
}
