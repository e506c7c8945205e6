package compatinterop

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	compatredsync "github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// mutex is what the tests call on a mutex of either package.
type mutex interface {
	Value() string
	Until() time.Time
	LockContext(ctx context.Context) error
	TryLockContext(ctx context.Context) error
	ExtendContext(ctx context.Context) (bool, error)
	UnlockContext(ctx context.Context) (bool, error)
	ValidContext(ctx context.Context) (bool, error)
}

var (
	_ mutex = (*redsync.Mutex)(nil)
	_ mutex = (*compatredsync.Mutex)(nil)
)

// mutexConfig is the options a test gives a mutex, in terms both packages
// understand.
type mutexConfig struct {
	expiry time.Duration                 // WithExpiry; locktest.TTL when zero
	tries  int                           // WithTries; 1 when zero
	value  string                        // WithValue when not empty
	delay  func(tries int) time.Duration // WithRetryDelayFunc when not nil
}

// roundTimeoutFactor gives every round of requests 30% of the expiry (3s
// with locktest.TTL) instead of the default 5%: a node of a small, shared
// machine that is slow to answer must not turn a refusal into a timeout.
const roundTimeoutFactor = 0.3

// redsyncImpl is one package with redsync's API, over some of the nodes.
type redsyncImpl struct {
	name     string
	newMutex func(key string, c mutexConfig) mutex
	// takenNodes returns the sorted Nodes of the package's *ErrTaken in
	// err, and whether there is one.
	takenNodes func(err error) ([]int, bool)
	// The package's sentinel errors.
	errFailed, errLockAlreadyExpired error
}

// redsyncOn builds a redsyncImpl over the nodes at the given indexes; node
// numbers in its errors count from 0 in that order.
type redsyncOn func(nodes ...int) redsyncImpl

func originalRedsync(pools []redsyncredis.Pool) redsyncImpl {
	rs := redsync.New(pools...)
	return redsyncImpl{
		name: "redsync",
		newMutex: func(key string, c mutexConfig) mutex {
			opts := []redsync.Option{
				redsync.WithExpiry(cmp.Or(c.expiry, locktest.TTL)),
				redsync.WithTries(cmp.Or(c.tries, 1)),
				redsync.WithTimeoutFactor(roundTimeoutFactor),
			}
			if c.value != "" {
				opts = append(opts, redsync.WithValue(c.value))
			}
			if c.delay != nil {
				opts = append(opts, redsync.WithRetryDelayFunc(c.delay))
			}
			return rs.NewMutex(key, opts...)
		},
		takenNodes: func(err error) ([]int, bool) {
			var taken *redsync.ErrTaken
			if !errors.As(err, &taken) {
				return nil, false
			}
			// redsync lists the nodes in the order they answered.
			return slices.Sorted(slices.Values(taken.Nodes)), true
		},
		errFailed:             redsync.ErrFailed,
		errLockAlreadyExpired: redsync.ErrLockAlreadyExpired,
	}
}

func compatRedsync(conns []driver.Conn) redsyncImpl {
	rs := compatredsync.New(conns...)
	return redsyncImpl{
		name: "compat",
		newMutex: func(key string, c mutexConfig) mutex {
			opts := []compatredsync.Option{
				compatredsync.WithExpiry(cmp.Or(c.expiry, locktest.TTL)),
				compatredsync.WithTries(cmp.Or(c.tries, 1)),
				compatredsync.WithTimeoutFactor(roundTimeoutFactor),
			}
			if c.value != "" {
				opts = append(opts, compatredsync.WithValue(c.value))
			}
			if c.delay != nil {
				opts = append(opts, compatredsync.WithRetryDelayFunc(c.delay))
			}
			return rs.NewMutex(key, opts...)
		},
		takenNodes: func(err error) ([]int, bool) {
			var taken *compatredsync.ErrTaken
			if !errors.As(err, &taken) {
				return nil, false
			}
			return slices.Sorted(slices.Values(taken.Nodes)), true
		},
		errFailed:             compatredsync.ErrFailed,
		errLockAlreadyExpired: compatredsync.ErrLockAlreadyExpired,
	}
}

// pick returns the elements of s at the given indexes, in that order.
func pick[T any](s []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = s[j]
	}
	return out
}

// TestRedsyncWireCompat runs compat/redsync, over each adapter, and
// go-redsync/redsync v4, over go-redis v9, on the same names of three
// nodes, each package in turn holding the lock.
func TestRedsyncWireCompat(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		client := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		t.Cleanup(func() { _ = client.Close() })
		pools[i] = redsyncgoredis.NewPool(client)
	}
	originalOn := func(idx ...int) redsyncImpl { return originalRedsync(pick(pools, idx)) }

	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			conns := locktest.Conns(t, a, nodes)
			compatOn := func(idx ...int) redsyncImpl { return compatRedsync(pick(conns, idx)) }

			for _, pair := range []struct{ holder, other redsyncOn }{
				{holder: originalOn, other: compatOn},
				{holder: compatOn, other: originalOn},
			} {
				holder, other := pair.holder(0, 1, 2), pair.other(0, 1, 2)
				t.Run(holder.name+"_excludes_"+other.name, func(t *testing.T) {
					testRedsyncExcludes(t, nodes, holder, other)
				})
				t.Run(other.name+"_extends_and_unlocks_"+holder.name+"_lock", func(t *testing.T) {
					testRedsyncTakeover(t, nodes, holder, other)
				})
				t.Run(holder.name+"_holds_a_majority", func(t *testing.T) {
					testRedsyncMajorityHeld(t, nodes, pair.holder(0, 1), other)
				})
				t.Run(holder.name+"_holds_a_minority", func(t *testing.T) {
					testRedsyncMinorityHeld(t, nodes, pair.holder(2), other)
				})
			}
		})
	}
}

// testRedsyncExcludes locks a name with holder and checks that other is
// refused, with its ErrTaken on a single try and its ErrFailed when its
// context ends between tries, and that other can lock the name once holder
// unlocks it.
func testRedsyncExcludes(t *testing.T, nodes []*redisnode.Node, holder, other redsyncImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held := holder.newMutex(key, mutexConfig{})
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("%s Lock: %v", holder.name, err)
	}
	requireRedsyncValue(t, holder.name, held.Value())
	requireAllHold(t, nodes, key, held.Value())

	err := other.newMutex(key, mutexConfig{}).TryLockContext(ctx)
	if got, ok := other.takenNodes(err); !ok || !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("%s TryLock of a mutex %s holds = %v, want its *ErrTaken on nodes [0 1 2]", other.name, holder.name, err)
	}

	// The delay before the second try ends the context, so Lock gives up
	// between tries.
	retryCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	giveUp := func(int) time.Duration {
		cancel()
		return time.Hour
	}
	err = other.newMutex(key, mutexConfig{tries: 2, delay: giveUp}).LockContext(retryCtx)
	if !errors.Is(err, other.errFailed) {
		t.Errorf("%s Lock of a mutex %s holds, cancelled between tries = %v, want its ErrFailed", other.name, holder.name, err)
	}

	// The refused attempts left the holder's key alone.
	requireAllHold(t, nodes, key, held.Value())
	if ok, err := held.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock = %v, %v; want true, nil", holder.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)

	next := other.newMutex(key, mutexConfig{})
	if err := next.TryLockContext(ctx); err != nil {
		t.Fatalf("%s TryLock after %s's Unlock: %v", other.name, holder.name, err)
	}
	requireRedsyncValue(t, other.name, next.Value())
	requireAllHold(t, nodes, key, next.Value())
	if ok, err := next.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock = %v, %v; want true, nil", other.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)
}

// testRedsyncTakeover locks a name with holder, and has other, given the
// lock's value with WithValue, check, extend and unlock it; then holder's
// mutex finds its lock gone and can lock the name again.
func testRedsyncTakeover(t *testing.T, nodes []*redisnode.Node, holder, other redsyncImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held := holder.newMutex(key, mutexConfig{})
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("%s Lock: %v", holder.name, err)
	}
	value := held.Value()

	longer := 3 * locktest.TTL
	taker := other.newMutex(key, mutexConfig{value: value, expiry: longer})
	if got := taker.Value(); got != value {
		t.Errorf("%s WithValue(%q): Value() = %q", other.name, value, got)
	}
	if ok, err := taker.ValidContext(ctx); !ok || err != nil {
		t.Errorf("%s Valid with %s's value = %v, %v; want true, nil", other.name, holder.name, ok, err)
	}
	if ok, err := taker.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("%s Extend with %s's value = %v, %v; want true, nil", other.name, holder.name, ok, err)
	}
	if taker.Until().IsZero() {
		t.Errorf("%s Until after a successful Extend is the zero time", other.name)
	}
	for i, n := range nodes {
		if pttl := locktest.PTTL(t, n, key); pttl <= locktest.TTL {
			t.Errorf("node %d: PTTL after %s's Extend to %v = %v, want above %v", i, other.name, longer, pttl, locktest.TTL)
		}
	}
	requireAllHold(t, nodes, key, value)
	if ok, err := held.ValidContext(ctx); !ok || err != nil {
		t.Errorf("%s Valid after %s extended its lock = %v, %v; want true, nil", holder.name, other.name, ok, err)
	}

	if ok, err := taker.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock with %s's value = %v, %v; want true, nil", other.name, holder.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)

	if ok, err := held.UnlockContext(ctx); ok || !errors.Is(err, holder.errLockAlreadyExpired) {
		t.Errorf("%s Unlock after %s unlocked its lock = %v, %v; want false and its ErrLockAlreadyExpired", holder.name, other.name, ok, err)
	}
	if ok, err := held.ExtendContext(ctx); ok {
		t.Errorf("%s Extend after %s unlocked its lock = %v, %v; want false", holder.name, other.name, ok, err)
	} else if _, taken := holder.takenNodes(err); !taken {
		t.Errorf("%s Extend after %s unlocked its lock: %v, want its *ErrTaken", holder.name, other.name, err)
	}
	locktest.RequireNoKey(t, nodes, key)

	if err := held.TryLockContext(ctx); err != nil {
		t.Fatalf("%s TryLock after %s's Unlock: %v", holder.name, other.name, err)
	}
	requireAllHold(t, nodes, key, held.Value())
	if ok, err := held.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock = %v, %v; want true, nil", holder.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)
}

// testRedsyncMajorityHeld has holder, over nodes 0 and 1 only, lock a name
// and checks that other, over all three, is refused with an ErrTaken
// naming exactly those nodes, and removes what its attempt set on node 2.
func testRedsyncMajorityHeld(t *testing.T, nodes []*redisnode.Node, holder, other redsyncImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held := holder.newMutex(key, mutexConfig{})
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("%s Lock on nodes 0 and 1: %v", holder.name, err)
	}

	err := other.newMutex(key, mutexConfig{}).TryLockContext(ctx)
	if got, ok := other.takenNodes(err); !ok || !slices.Equal(got, []int{0, 1}) {
		t.Errorf("%s TryLock of a mutex %s holds on nodes 0 and 1 = %v, want its *ErrTaken on nodes [0 1]", other.name, holder.name, err)
	}
	requireAllHold(t, nodes[:2], key, held.Value())
	locktest.RequireNoKey(t, nodes[2:], key)

	if ok, err := held.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock = %v, %v; want true, nil", holder.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)
}

// testRedsyncMinorityHeld has holder, over node 2 only, lock a name and
// checks that other, over all three, locks it with nodes 0 and 1 and
// unlocks it there, leaving holder's key on node 2 alone.
func testRedsyncMinorityHeld(t *testing.T, nodes []*redisnode.Node, holder, other redsyncImpl) {
	ctx := t.Context()
	key := locktest.Key(t)
	held := holder.newMutex(key, mutexConfig{})
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("%s Lock on node 2: %v", holder.name, err)
	}

	m := other.newMutex(key, mutexConfig{})
	if err := m.TryLockContext(ctx); err != nil {
		t.Fatalf("%s TryLock of a mutex %s holds on node 2 only: %v", other.name, holder.name, err)
	}
	if got := locktest.Get(t, nodes, key); got[0] != m.Value() || got[1] != m.Value() || got[2] != held.Value() {
		t.Errorf("values on nodes 0, 1, 2 = %q, want %s's %q on 0 and 1 and %s's %q on 2", got, other.name, m.Value(), holder.name, held.Value())
	}

	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Errorf("%s Unlock with a quorum released = %v, %v; want true, nil", other.name, ok, err)
	}
	if got := locktest.Get(t, nodes, key); got[0] != nil || got[1] != nil || got[2] != held.Value() {
		t.Errorf("values on nodes 0, 1, 2 after %s's Unlock = %q, want none on 0 and 1 and %s's %q on 2", other.name, got, holder.name, held.Value())
	}
	if ok, err := held.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("%s Unlock = %v, %v; want true, nil", holder.name, ok, err)
	}
	locktest.RequireNoKey(t, nodes, key)
}

// requireRedsyncValue fails the test unless value has redsync's format: 16
// random bytes in standard, padded base64 (24 characters).
func requireRedsyncValue(t *testing.T, who, value string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(value)
	if len(value) != 24 || err != nil || len(raw) != 16 {
		t.Fatalf("%s value %q: want 16 bytes in standard base64, 24 characters (decoded %d bytes, %v)", who, value, len(raw), err)
	}
}

// requireAllHold fails the test unless every node stores value under key.
func requireAllHold(t *testing.T, nodes []*redisnode.Node, key, value string) {
	t.Helper()
	if got := locktest.Holding(t, nodes, key, value); got != len(nodes) {
		t.Fatalf("%d of %d nodes hold %s=%q, want all; values: %q", got, len(nodes), key, value, locktest.Get(t, nodes, key))
	}
}
