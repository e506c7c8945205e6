package redsync_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/internal/faults"
)

func TestUnlockDeletesTheKey(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k")
	mustLock(t, m)
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock() = %v, %v, want true, nil", ok, err)
	}
	if got := c.keyCount(); got != 0 {
		t.Errorf("keys left = %d, want 0", got)
	}
	if got := m.Value(); got == "" {
		t.Errorf("Value() after Unlock is empty, want the value kept")
	}
}

func TestUnlockOfExpiredMutexReportsAlreadyExpired(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k", redsync.WithExpiry(time.Second))
	mustLock(t, m)
	c.expire(time.Second)

	ok, err := m.Unlock()
	if ok {
		t.Fatal("Unlock() of an expired mutex = true")
	}
	if !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Errorf("Unlock() error = %v, want one matching ErrLockAlreadyExpired", err)
	}
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		t.Errorf("Unlock() error = %v, want no *ErrTaken", err)
	}
}

func TestUnlockOfMutexTakenOverLeavesTheNewOwner(t *testing.T) {
	c := newCluster(t, 3)
	rs := c.redsync()
	m := rs.NewMutex("k", redsync.WithExpiry(time.Second))
	mustLock(t, m)
	c.expire(time.Second)
	other := rs.NewMutex("k")
	mustLock(t, other)

	ok, err := m.Unlock()
	var taken *redsync.ErrTaken
	if ok || !errors.As(err, &taken) {
		t.Fatalf("Unlock() = %v, %v, want false and a *ErrTaken", ok, err)
	}
	if got := c.holders("k", other.Value()); got != 3 {
		t.Errorf("nodes still holding the new owner's value = %d, want 3", got)
	}
}

func TestUnlockNeedsAQuorum(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []faults.Mode
		ok    bool
	}{
		{"all answer", nil, true},
		{"one fails", []faults.Mode{faults.Fail}, true},
		{"two fail", []faults.Mode{faults.Fail, faults.Fail}, false},
		{"reply lost on two", []faults.Mode{faults.LoseReply, faults.LoseReply}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			m := c.redsync().NewMutex("k")
			mustLock(t, m)
			c.setFaults(tc.modes...)
			ok, err := m.Unlock()
			if ok != tc.ok {
				t.Fatalf("Unlock() = %v, %v, want %v", ok, err, tc.ok)
			}
			if ok && err != nil {
				t.Errorf("Unlock() error = %v with a quorum, want nil", err)
			}
			var re *redsync.RedisError
			if !ok && !errors.As(err, &re) {
				t.Errorf("Unlock() error = %v, want a *RedisError", err)
			}
		})
	}
}

func TestUnlockIsNotCancelledWithTheCaller(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k")
	mustLock(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("UnlockContext(cancelled) = %v, %v, want true, nil", ok, err)
	}
	if got := c.keyCount(); got != 0 {
		t.Errorf("keys left = %d, want 0", got)
	}
}

func TestExtendResetsTheTTL(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k", redsync.WithExpiry(10*time.Second))
	mustLock(t, m)
	before := m.Until()
	c.expire(6 * time.Second)

	if ok, err := m.Extend(); !ok || err != nil {
		t.Fatalf("Extend() = %v, %v, want true, nil", ok, err)
	}
	for i, s := range c.servers {
		if got := s.TTL("k"); got != 10*time.Second {
			t.Errorf("node %d: TTL after Extend = %v, want 10s", i, got)
		}
	}
	if after := m.Until(); !after.After(before) {
		t.Errorf("Until() after Extend = %v, want later than %v", after, before)
	}
}

func TestExtendOfExpiredMutex(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []redsync.Option
		ok      bool
		holders int
	}{
		{"without SetNX the key stays gone", nil, false, 0},
		{"with SetNX the key is taken again", []redsync.Option{redsync.WithSetNXOnExtend()}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			m := c.redsync().NewMutex("k", append(tc.opts, redsync.WithExpiry(time.Second))...)
			mustLock(t, m)
			c.expire(time.Second)

			ok, err := m.Extend()
			if ok != tc.ok {
				t.Fatalf("Extend() = %v, %v, want %v", ok, err, tc.ok)
			}
			var taken *redsync.ErrTaken
			if !ok && !errors.As(err, &taken) {
				t.Errorf("Extend() error = %v, want a *ErrTaken", err)
			}
			if got := c.holders("k", m.Value()); got != tc.holders {
				t.Errorf("nodes holding the value = %d, want %d", got, tc.holders)
			}
		})
	}
}

func TestExtendWithSetNXRefusesAnotherOwner(t *testing.T) {
	c := newCluster(t, 3)
	rs := c.redsync()
	m := rs.NewMutex("k", redsync.WithExpiry(time.Second), redsync.WithSetNXOnExtend())
	mustLock(t, m)
	c.expire(time.Second)
	other := rs.NewMutex("k")
	mustLock(t, other)

	ok, err := m.Extend()
	var taken *redsync.ErrTaken
	if ok || !errors.As(err, &taken) {
		t.Fatalf("Extend() = %v, %v, want false and a *ErrTaken", ok, err)
	}
	if got := c.holders("k", other.Value()); got != 3 {
		t.Errorf("nodes holding the other owner's value = %d, want 3", got)
	}
}

func TestExtendTooSlowForValidity(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k",
		redsync.WithExpiry(time.Second),
		redsync.WithDriftFactor(0.5),
		redsync.WithTimeoutFactor(0.99))
	mustLock(t, m)
	// Load the extend script first, so that the Extend below is one call
	// per node.
	if ok, err := m.Extend(); !ok {
		t.Fatalf("Extend() = %v, %v", ok, err)
	}
	until := m.Until()
	for _, f := range c.faults {
		f.Delay(500 * time.Millisecond)
	}
	if ok, err := m.Extend(); ok || err != redsync.ErrExtendFailed {
		t.Fatalf("Extend() = %v, %v, want false, ErrExtendFailed", ok, err)
	}
	if got := m.Until(); !got.Equal(until) {
		t.Errorf("Until() after a failed Extend = %v, want unchanged %v", got, until)
	}
}

func TestExtendWithoutValueIsRefusedLocally(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redsync.Option
	}{
		{"plain", nil},
		{"with SetNX", []redsync.Option{redsync.WithSetNXOnExtend()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			m := c.redsync().NewMutex("k", tc.opts...)
			if ok, err := m.Extend(); ok || err != redsync.ErrExtendFailed {
				t.Errorf("Extend() = %v, %v, want false, ErrExtendFailed", ok, err)
			}
			if got := c.calls() + int64(c.keyCount()); got != 0 {
				t.Errorf("calls and keys = %d, want 0", got)
			}
		})
	}
}

func TestValid(t *testing.T) {
	c := newCluster(t, 3)
	rs := c.redsync()
	m := rs.NewMutex("k", redsync.WithExpiry(time.Second))

	if ok, _ := m.Valid(); ok {
		t.Error("Valid() before Lock = true")
	}
	if got := c.calls(); got != 0 {
		t.Errorf("Valid() without a value made %d calls, want 0", got)
	}
	mustLock(t, m)
	if ok, err := m.Valid(); !ok || err != nil {
		t.Errorf("Valid() while locked = %v, %v, want true, nil", ok, err)
	}
	c.expire(time.Second)
	mustLock(t, rs.NewMutex("k"))
	ok, err := m.Valid()
	var taken *redsync.ErrTaken
	if ok || !errors.As(err, &taken) {
		t.Errorf("Valid() after another owner took over = %v, %v, want false and a *ErrTaken", ok, err)
	}
}

func TestWithValueTakesOverALock(t *testing.T) {
	c := newCluster(t, 3)
	rs := c.redsync()
	owner := rs.NewMutex("k")
	mustLock(t, owner)

	heir := rs.NewMutex("k", redsync.WithValue(owner.Value()))
	if got := heir.Value(); got != owner.Value() {
		t.Fatalf("Value() = %q, want %q", got, owner.Value())
	}
	if ok, err := heir.Valid(); !ok || err != nil {
		t.Errorf("Valid() = %v, %v", ok, err)
	}
	if ok, err := heir.Extend(); !ok || err != nil {
		t.Errorf("Extend() = %v, %v", ok, err)
	}
	if ok, err := heir.Unlock(); !ok || err != nil {
		t.Errorf("Unlock() = %v, %v", ok, err)
	}
	if got := c.keyCount(); got != 0 {
		t.Errorf("keys left = %d, want 0", got)
	}
}

// A lock stored by go-redsync/redsync is a key named after the mutex that
// holds 24 characters of base64; the compat mutex must respect and be able
// to release it.
func TestLockOfAnotherLibrary(t *testing.T) {
	const foreign = "q83vEjRWeJCrze8SNFZ4kA=="
	c := newCluster(t, 3)
	c.set(t, 3, "jobs", foreign, 8*time.Second)
	rs := c.redsync()

	var taken *redsync.ErrTaken
	if err := rs.NewMutex("jobs").TryLock(); !errors.As(err, &taken) {
		t.Fatalf("TryLock() of a name held by another library = %v, want a *ErrTaken", err)
	}
	if ok, err := rs.NewMutex("jobs", redsync.WithValue(foreign)).Unlock(); !ok || err != nil {
		t.Fatalf("Unlock() with the other library's value = %v, %v", ok, err)
	}
	mustLock(t, rs.NewMutex("jobs"))
}

func TestFailFastReturnsWithoutTheSlowestNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		held  int // nodes on which another owner holds the key
		fail  bool
		taken bool
		nodes []int
	}{
		{"granted", 0, false, false, nil},
		{"taken", 2, false, true, []int{0, 1}},
		// One node taken and one failing leave no quorum to reach.
		{"no quorum left", 1, true, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			c.set(t, tc.held, "k", "theirs", time.Minute)
			if tc.fail {
				c.faults[1].Set(faults.Fail)
			}
			unblock := make(chan struct{})
			var slowDone atomic.Bool
			c.faults[2].OnCall(func(string) {
				select {
				case <-unblock:
				case <-time.After(10 * time.Second):
				}
				slowDone.Store(true)
			})
			m := c.redsync().NewMutex("k", redsync.WithFailFast(true), redsync.WithExpiry(time.Minute))

			err := m.TryLock()
			returnedFirst := !slowDone.Load()
			close(unblock)
			if !returnedFirst {
				t.Error("TryLock() waited for the slow node")
			}
			var taken *redsync.ErrTaken
			wantErr := tc.taken || tc.fail
			if got := errors.As(err, &taken); got != tc.taken || (err != nil) != wantErr {
				t.Fatalf("TryLock() = %v, want taken %v", err, tc.taken)
			}
			// Nodes are listed in node order.
			if tc.taken && !slices.Equal(slices.Sorted(slices.Values(taken.Nodes)), tc.nodes) {
				t.Errorf("ErrTaken.Nodes = %v, want %v in any order", taken.Nodes, tc.nodes)
			}
			waitFor(t, slowDone.Load)
		})
	}
}

func TestShufflePools(t *testing.T) {
	c := newCluster(t, 5)
	c.faults[0].Set(faults.Fail)
	rs := c.redsync()

	// failingNode locks m and returns the number m's errors give the
	// failing node.
	failingNode := func(m *redsync.Mutex) int {
		t.Helper()
		mustLock(t, m)
		defer m.Unlock()
		_, err := m.Valid()
		var re *redsync.RedisError
		if !errors.As(err, &re) {
			t.Fatalf("Valid() = %v, want a *RedisError", err)
		}
		return re.Node
	}

	failedAs := map[int]bool{}
	for range 50 {
		failedAs[failingNode(rs.NewMutex("k", redsync.WithShufflePools(true)))] = true
	}
	if len(failedAs) < 2 {
		t.Errorf("the failing node was always numbered %v in 50 shuffled mutexes", failedAs)
	}

	// Shuffling copies: the Redsync's own order is untouched.
	if got := failingNode(rs.NewMutex("k")); got != 0 {
		t.Errorf("unshuffled mutex numbers the failing node %d, want 0", got)
	}
}

func TestInvalidConfigurationIsReportedByEveryCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes func(*cluster) *redsync.Redsync
		opts  []redsync.Option
	}{
		{"no nodes", func(*cluster) *redsync.Redsync { return redsync.New() }, nil},
		{"nil node", func(c *cluster) *redsync.Redsync { return redsync.New(c.conns[0], nil) }, nil},
		{"same node twice", func(c *cluster) *redsync.Redsync { return redsync.New(c.conns[0], c.conns[1], c.conns[0]) }, nil},
		{"nil Redsync", func(*cluster) *redsync.Redsync { return nil }, nil},
		{"nil option", nil, []redsync.Option{nil}},
		{"zero expiry", nil, []redsync.Option{redsync.WithExpiry(0)}},
		{"sub-millisecond expiry", nil, []redsync.Option{redsync.WithExpiry(time.Microsecond)}},
		{"expiry within the drift", nil, []redsync.Option{redsync.WithExpiry(2 * time.Millisecond)}},
		{"negative drift factor", nil, []redsync.Option{redsync.WithDriftFactor(-0.1)}},
		{"drift factor 1", nil, []redsync.Option{redsync.WithDriftFactor(1)}},
		{"zero timeout factor", nil, []redsync.Option{redsync.WithTimeoutFactor(0)}},
		{"timeout factor 1", nil, []redsync.Option{redsync.WithTimeoutFactor(1)}},
		{"timeout below 1ms", nil, []redsync.Option{redsync.WithExpiry(10 * time.Millisecond), redsync.WithTimeoutFactor(0.01)}},
		{"nil delay func", nil, []redsync.Option{redsync.WithRetryDelayFunc(nil)}},
		{"nil value func", nil, []redsync.Option{redsync.WithGenValueFunc(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			rs := c.redsync()
			if tc.nodes != nil {
				rs = tc.nodes(c)
			}
			m := rs.NewMutex("k", tc.opts...)
			errs := map[string]error{
				"Lock":    m.Lock(),
				"TryLock": m.TryLock(),
			}
			_, errs["Unlock"] = m.Unlock()
			_, errs["Extend"] = redsyncWithValue(rs, tc.opts).Extend()
			_, errs["Valid"] = m.Valid()
			for call, err := range errs {
				if err == nil || errors.Is(err, redsync.ErrFailed) {
					t.Errorf("%s() = %v, want a configuration error", call, err)
				}
			}
			if got := c.calls(); got != 0 {
				t.Errorf("calls to the nodes = %d, want 0", got)
			}
		})
	}
}

// redsyncWithValue makes a mutex with a value, so that Extend gets past its
// check for one.
func redsyncWithValue(rs *redsync.Redsync, opts []redsync.Option) *redsync.Mutex {
	return rs.NewMutex("k", append([]redsync.Option{redsync.WithValue("v")}, opts...)...)
}

func TestZeroTriesFailsLockButNotTryLock(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k", redsync.WithTries(0))
	if err := m.Lock(); err == nil || errors.Is(err, redsync.ErrFailed) {
		t.Errorf("Lock() with WithTries(0) = %v, want a configuration error", err)
	}
	if err := m.TryLock(); err != nil {
		t.Errorf("TryLock() with WithTries(0) = %v, want nil", err)
	}
}

func TestOptionFuncApplies(t *testing.T) {
	c := newCluster(t, 3)
	both := redsync.OptionFunc(func(m *redsync.Mutex) {
		redsync.WithExpiry(3 * time.Second).Apply(m)
		redsync.WithTries(1).Apply(m)
	})
	m := c.redsync().NewMutex("k", both)
	mustLock(t, m)
	if got := c.servers[0].TTL("k"); got != 3*time.Second {
		t.Errorf("TTL = %v, want 3s", got)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&redsync.ErrTaken{Nodes: []int{0, 2}}, "redsync: lock already taken on nodes [0 2]"},
		{&redsync.ErrNodeTaken{Node: 1}, "redsync: node #1: lock already taken"},
		{&redsync.RedisError{Node: 2, Err: errors.New("boom")}, "redsync: node #2: boom"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
