package compatinterop

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	compatredislock "github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// heldLock is a lock obtained through either package, with the methods the
// tests call on it.
type heldLock struct {
	by              string // the package that obtained it
	token, metadata string
	ttl             func(ctx context.Context) (time.Duration, error)
	refresh         func(ctx context.Context, ttl time.Duration) error
	release         func(ctx context.Context) error
}

// obtainConfig is the Options a test obtains a lock with, in terms both
// packages understand.
type obtainConfig struct {
	token, metadata string
	// retry makes Obtain try up to three more times, retryDelay apart,
	// instead of once.
	retry bool
}

// retryDelay is the delay between the tries of an Obtain with retries.
const retryDelay = 10 * time.Millisecond

// redislockImpl is one package with redislock's API.
type redislockImpl struct {
	name   string
	obtain func(ctx context.Context, key string, ttl time.Duration, c obtainConfig) (*heldLock, error)
	// The package's sentinel errors.
	errNotObtained, errLockNotHeld error
}

func originalRedislock(client *goredis.Client) redislockImpl {
	locker := redislock.New(client)
	return redislockImpl{
		name: "redislock",
		obtain: func(ctx context.Context, key string, ttl time.Duration, c obtainConfig) (*heldLock, error) {
			opt := &redislock.Options{Token: c.token, Metadata: c.metadata}
			if c.retry {
				opt.RetryStrategy = redislock.LimitRetry(redislock.LinearBackoff(retryDelay), 3)
			}
			l, err := locker.Obtain(ctx, key, ttl, opt)
			if err != nil {
				return nil, err
			}
			return &heldLock{
				by:       "redislock",
				token:    l.Token(),
				metadata: l.Metadata(),
				ttl:      l.TTL,
				refresh:  func(ctx context.Context, ttl time.Duration) error { return l.Refresh(ctx, ttl, nil) },
				release:  l.Release,
			}, nil
		},
		errNotObtained: redislock.ErrNotObtained,
		errLockNotHeld: redislock.ErrLockNotHeld,
	}
}

func compatRedislock(conn driver.Conn) redislockImpl {
	locker := compatredislock.NewFromConn(conn)
	return redislockImpl{
		name: "compat",
		obtain: func(ctx context.Context, key string, ttl time.Duration, c obtainConfig) (*heldLock, error) {
			opt := &compatredislock.Options{Token: c.token, Metadata: c.metadata}
			if c.retry {
				opt.RetryStrategy = compatredislock.LimitRetry(compatredislock.LinearBackoff(retryDelay), 3)
			}
			l, err := locker.Obtain(ctx, key, ttl, opt)
			if err != nil {
				return nil, err
			}
			return &heldLock{
				by:       "compat",
				token:    l.Token(),
				metadata: l.Metadata(),
				ttl:      l.TTL,
				refresh:  func(ctx context.Context, ttl time.Duration) error { return l.Refresh(ctx, ttl, nil) },
				release:  l.Release,
			}, nil
		},
		errNotObtained: compatredislock.ErrNotObtained,
		errLockNotHeld: compatredislock.ErrLockNotHeld,
	}
}

// TestRedislockWireCompat runs compat/redislock, over each adapter, and
// bsm/redislock, over go-redis v9, on the same keys of one node, each
// package in turn holding the lock.
func TestRedislockWireCompat(t *testing.T) {
	nodes := redisnode.Start(t, 1, redisnode.Config{})
	node := nodes[0]
	rdb := goredis.NewClient(&goredis.Options{Addr: node.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	original := originalRedislock(rdb)

	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			compat := compatRedislock(a.Conn(t, node.Addr()))
			for _, pair := range []struct{ holder, other redislockImpl }{
				{holder: original, other: compat},
				{holder: compat, other: original},
			} {
				holder, other := pair.holder, pair.other
				t.Run(holder.name+"_excludes_"+other.name, func(t *testing.T) {
					testRedislockExcludes(t, node, holder, other)
				})
				// The stored value is the token followed by the metadata;
				// without metadata it is the token alone.
				for _, metadata := range []string{"", `{"job":42}`} {
					name := other.name + "_takes_over_" + holder.name + "_lock"
					if metadata != "" {
						name += "_with_metadata"
					}
					t.Run(name, func(t *testing.T) {
						testRedislockTakeover(t, node, holder, other, metadata)
					})
				}
				t.Run(other.name+"_retakes_"+holder.name+"_lock_with_other_metadata", func(t *testing.T) {
					testRedislockRetake(t, node, holder, other)
				})
			}
		})
	}
}

// testRedislockExcludes obtains a key with holder and checks that other is
// refused with its ErrNotObtained, with and without retries, and that other
// can obtain the key once holder releases it.
func testRedislockExcludes(t *testing.T, node *redisnode.Node, holder, other redislockImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held, err := holder.obtain(ctx, key, locktest.TTL, obtainConfig{})
	if err != nil {
		t.Fatalf("%s Obtain: %v", holder.name, err)
	}
	requireRedislockToken(t, holder.name, held.token)
	requireStored(t, node, key, held.token)

	for _, retry := range []bool{false, true} {
		if _, err := other.obtain(ctx, key, locktest.TTL, obtainConfig{retry: retry}); !errors.Is(err, other.errNotObtained) {
			t.Errorf("%s Obtain (retry: %v) of a key %s holds = %v, want its ErrNotObtained", other.name, retry, holder.name, err)
		}
	}
	// The refusals left the holder's lock alone.
	requireStored(t, node, key, held.token)
	requireTTLs(t, node, key, locktest.TTL, held)

	if err := held.release(ctx); err != nil {
		t.Fatalf("%s Release: %v", holder.name, err)
	}
	requireNoKey(t, node, key)

	next, err := other.obtain(ctx, key, locktest.TTL, obtainConfig{})
	if err != nil {
		t.Fatalf("%s Obtain after %s's Release: %v", other.name, holder.name, err)
	}
	requireRedislockToken(t, other.name, next.token)
	requireStored(t, node, key, next.token)
	if err := next.release(ctx); err != nil {
		t.Fatalf("%s Release: %v", other.name, err)
	}
	requireNoKey(t, node, key)
}

// testRedislockTakeover obtains a key with holder and metadata, and has
// other obtain it again with the holder's token and the same metadata, then
// refresh and release it; the holder's lock is then gone, and holder can
// obtain the key again.
func testRedislockTakeover(t *testing.T, node *redisnode.Node, holder, other redislockImpl, metadata string) {
	ctx := t.Context()
	key := locktest.Key(t)
	held, err := holder.obtain(ctx, key, locktest.TTL, obtainConfig{metadata: metadata})
	if err != nil {
		t.Fatalf("%s Obtain: %v", holder.name, err)
	}
	requireRedislockToken(t, holder.name, held.token)
	if held.metadata != metadata {
		t.Errorf("%s Metadata() = %q, want %q", holder.name, held.metadata, metadata)
	}
	value := held.token + metadata
	requireStored(t, node, key, value)

	longer := 3 * locktest.TTL
	taken, err := other.obtain(ctx, key, longer, obtainConfig{token: held.token, metadata: metadata})
	if err != nil {
		t.Fatalf("%s Obtain with %s's token: %v", other.name, holder.name, err)
	}
	if taken.token != held.token || taken.metadata != metadata {
		t.Errorf("%s lock obtained with %s's token: Token() = %q, Metadata() = %q; want %q, %q", other.name, holder.name, taken.token, taken.metadata, held.token, metadata)
	}
	requireStored(t, node, key, value)
	if pttl := locktest.PTTL(t, node, key); pttl <= locktest.TTL {
		t.Errorf("PTTL after %s obtained the lock again for %v = %v, want above %v", other.name, longer, pttl, locktest.TTL)
	}
	requireTTLs(t, node, key, longer, held, taken)

	longest := 4 * locktest.TTL
	if err := taken.refresh(ctx, longest); err != nil {
		t.Fatalf("%s Refresh of %s's lock: %v", other.name, holder.name, err)
	}
	requireStored(t, node, key, value)
	if pttl := locktest.PTTL(t, node, key); pttl <= longer {
		t.Errorf("PTTL after %s's Refresh(%v) = %v, want above %v", other.name, longest, pttl, longer)
	}
	requireTTLs(t, node, key, longest, taken, held)

	if err := taken.release(ctx); err != nil {
		t.Fatalf("%s Release of %s's lock: %v", other.name, holder.name, err)
	}
	requireNoKey(t, node, key)
	if err := held.release(ctx); !errors.Is(err, holder.errLockNotHeld) {
		t.Errorf("%s Release after %s released its lock = %v, want its ErrLockNotHeld", holder.name, other.name, err)
	}
	if err := held.refresh(ctx, locktest.TTL); !errors.Is(err, holder.errNotObtained) {
		t.Errorf("%s Refresh after %s released its lock = %v, want its ErrNotObtained", holder.name, other.name, err)
	}
	if ttl, err := held.ttl(ctx); ttl != 0 || err != nil {
		t.Errorf("%s TTL after %s released its lock = %v, %v; want 0, nil", holder.name, other.name, ttl, err)
	}
	requireNoKey(t, node, key)

	again, err := holder.obtain(ctx, key, locktest.TTL, obtainConfig{})
	if err != nil {
		t.Fatalf("%s Obtain after %s's Release: %v", holder.name, other.name, err)
	}
	if err := again.release(ctx); err != nil {
		t.Fatalf("%s Release: %v", holder.name, err)
	}
}

// testRedislockRetake obtains a key with holder and metadata, and has other
// obtain it again with the holder's token and other metadata: the stored
// value changes, so the holder's lock no longer matches it, in either
// package.
func testRedislockRetake(t *testing.T, node *redisnode.Node, holder, other redislockImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held, err := holder.obtain(ctx, key, locktest.TTL, obtainConfig{metadata: "by:" + holder.name})
	if err != nil {
		t.Fatalf("%s Obtain: %v", holder.name, err)
	}
	metadata := "by:" + other.name
	taken, err := other.obtain(ctx, key, locktest.TTL, obtainConfig{token: held.token, metadata: metadata})
	if err != nil {
		t.Fatalf("%s Obtain with %s's token and other metadata: %v", other.name, holder.name, err)
	}
	if taken.token != held.token || taken.metadata != metadata {
		t.Errorf("%s lock obtained with %s's token: Token() = %q, Metadata() = %q; want %q, %q", other.name, holder.name, taken.token, taken.metadata, held.token, metadata)
	}
	value := held.token + metadata
	requireStored(t, node, key, value)

	if ttl, err := held.ttl(ctx); ttl != 0 || err != nil {
		t.Errorf("%s TTL of its lock stored anew with other metadata = %v, %v; want 0, nil", holder.name, ttl, err)
	}
	if err := held.refresh(ctx, locktest.TTL); !errors.Is(err, holder.errNotObtained) {
		t.Errorf("%s Refresh of its lock stored anew with other metadata = %v, want its ErrNotObtained", holder.name, err)
	}
	if err := held.release(ctx); !errors.Is(err, holder.errLockNotHeld) {
		t.Errorf("%s Release of its lock stored anew with other metadata = %v, want its ErrLockNotHeld", holder.name, err)
	}
	requireStored(t, node, key, value)
	requireTTLs(t, node, key, locktest.TTL, taken)

	if err := taken.release(ctx); err != nil {
		t.Fatalf("%s Release: %v", other.name, err)
	}
	requireNoKey(t, node, key)
}

// requireRedislockToken fails the test unless token has redislock's
// format: 16 random bytes in unpadded URL-safe base64 (22 characters).
func requireRedislockToken(t *testing.T, who, token string) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if len(token) != 22 || err != nil || len(raw) != 16 {
		t.Fatalf("%s token %q: want 16 bytes in unpadded URL-safe base64, 22 characters (decoded %d bytes, %v)", who, token, len(raw), err)
	}
}

// requireStored fails the test unless node stores value under key.
func requireStored(t *testing.T, node *redisnode.Node, key, value string) {
	t.Helper()
	if got := node.Do(t, "GET", key); got != value {
		t.Fatalf("GET %s = %v, want %q", key, got, value)
	}
}

// requireTTLs reads the TTL of each lock in turn, with the key's PTTL read
// before and after each, and fails the test unless every reading is in (0,
// limit] and none is above the one before: the locks report the time to
// live of the same key, which nothing refreshes meanwhile.
func requireTTLs(t *testing.T, node *redisnode.Node, key string, limit time.Duration, locks ...*heldLock) {
	t.Helper()
	type reading struct {
		of  string
		ttl time.Duration
	}
	readings := []reading{{"PTTL", locktest.PTTL(t, node, key)}}
	for _, l := range locks {
		ttl, err := l.ttl(t.Context())
		if err != nil {
			t.Fatalf("%s TTL: %v", l.by, err)
		}
		readings = append(readings, reading{l.by + " TTL", ttl}, reading{"PTTL", locktest.PTTL(t, node, key)})
	}
	for i, r := range readings {
		if r.ttl <= 0 || r.ttl > limit || (i > 0 && r.ttl > readings[i-1].ttl) {
			t.Fatalf("readings in turn %v: want each in (0, %v] and none above the one before", readings, limit)
		}
	}
}

// requireNoKey fails the test if node has key.
func requireNoKey(t *testing.T, node *redisnode.Node, key string) {
	t.Helper()
	locktest.RequireNoKey(t, []*redisnode.Node{node}, key)
}
