package redsync_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/compat/redsync"
	"github.com/locksmith-go/locksmith/internal/faults"
)

func TestLockStoresNameAndValueOnEveryNode(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("orders")
	if got := m.Value(); got != "" {
		t.Fatalf("Value before Lock = %q, want empty", got)
	}
	if got := m.Until(); !got.IsZero() {
		t.Fatalf("Until before Lock = %v, want zero", got)
	}
	mustLock(t, m)

	if got := m.Name(); got != "orders" {
		t.Errorf("Name() = %q, want %q", got, "orders")
	}
	if got := c.holders("orders", m.Value()); got != 3 {
		t.Errorf("nodes holding the value = %d, want 3", got)
	}
	for i, s := range c.servers {
		if got := s.TTL("orders"); got != 8*time.Second {
			t.Errorf("node %d: TTL = %v, want the default expiry 8s", i, got)
		}
	}
}

func TestValueIsPaddedBase64Of16Bytes(t *testing.T) {
	c := newCluster(t, 1)
	seen := map[string]bool{}
	for i := range 20 {
		m := c.redsync().NewMutex(fmt.Sprint("k", i))
		mustLock(t, m)
		v := m.Value()
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(raw) != 16 || len(v) != 24 {
			t.Fatalf("Value() = %q: decodes to %d bytes (err %v), want 24 characters of standard base64 for 16 bytes", v, len(raw), err)
		}
		if seen[v] {
			t.Fatalf("Value() = %q twice", v)
		}
		seen[v] = true
	}
}

func TestUntilIsStartPlusExpiryLessDrift(t *testing.T) {
	c := newCluster(t, 3)
	const expiry = 2 * time.Second
	drift := time.Duration(float64(expiry)*0.01) + 2*time.Millisecond
	m := c.redsync().NewMutex("k", redsync.WithExpiry(expiry))

	before := time.Now()
	mustLock(t, m)
	after := time.Now()

	until := m.Until()
	if until.Before(before.Add(expiry-drift)) || until.After(after.Add(expiry-drift)) {
		t.Errorf("Until() = %v, want between %v and %v", until, before.Add(expiry-drift), after.Add(expiry-drift))
	}
}

func TestTryLockOfTakenNameReportsTakenNodes(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	m := c.redsync().NewMutex("k")

	err := m.TryLock()
	var taken *redsync.ErrTaken
	if !errors.As(err, &taken) {
		t.Fatalf("TryLock() = %v, want a *ErrTaken", err)
	}
	if want := []int{0, 1, 2}; !slices.Equal(taken.Nodes, want) {
		t.Errorf("ErrTaken.Nodes = %v, want %v", taken.Nodes, want)
	}
	if got := c.holders("k", "theirs"); got != 3 {
		t.Errorf("nodes still holding the other owner's value = %d, want 3", got)
	}
	if got := m.Value(); got != "" {
		t.Errorf("Value() after a failed TryLock = %q, want empty", got)
	}
}

func TestTakenOnAMinorityReportsEachNode(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 1, "k", "theirs", time.Minute)
	c.setFaults(faults.Pass, faults.Fail, faults.Fail)
	m := c.redsync().NewMutex("k")

	err := m.TryLock()
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		t.Fatalf("TryLock() = %v, want no *ErrTaken with one node taken", err)
	}
	var nodeTaken *redsync.ErrNodeTaken
	if !errors.As(err, &nodeTaken) || nodeTaken.Node != 0 {
		t.Errorf("TryLock() = %v, want a *ErrNodeTaken for node 0", err)
	}
	var nodes []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var re *redsync.RedisError
		if errors.As(e, &re) {
			nodes = append(nodes, re.Node)
			if !errors.Is(re, faults.ErrInjected) {
				t.Errorf("RedisError %v does not unwrap to the node's error", re)
			}
		}
	}
	if want := []int{1, 2}; !slices.Equal(nodes, want) {
		t.Errorf("RedisError nodes = %v, want %v", nodes, want)
	}
}

func TestLockNeedsAMajorityOfConfiguredNodes(t *testing.T) {
	for _, tc := range []struct {
		failing int
		granted bool
	}{
		{failing: 0, granted: true},
		{failing: 2, granted: true},
		{failing: 3, granted: false},
		{failing: 5, granted: false},
	} {
		t.Run(fmt.Sprintf("%d of 5 failing", tc.failing), func(t *testing.T) {
			c := newCluster(t, 5)
			for i := range tc.failing {
				c.faults[4-i].Set(faults.Fail)
			}
			m := c.redsync().NewMutex("k")
			err := m.TryLock()
			if got := err == nil; got != tc.granted {
				t.Fatalf("TryLock() = %v, want granted %v", err, tc.granted)
			}
			if tc.granted {
				return
			}
			var re *redsync.RedisError
			if !errors.As(err, &re) {
				t.Errorf("TryLock() = %v, want a *RedisError among the errors", err)
			}
			if got := c.keyCount(); got != 0 {
				t.Errorf("keys left after the failed attempt = %d, want 0", got)
			}
		})
	}
}

func TestLockRetriesWithTheDelayFunc(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	var retries []int
	m := c.redsync().NewMutex("k", redsync.WithRetryDelayFunc(func(tries int) time.Duration {
		retries = append(retries, tries)
		if tries == 3 {
			// The other owner releases before the fourth attempt.
			for _, s := range c.servers {
				s.Del("k")
			}
		}
		return 0
	}))
	mustLock(t, m)
	if want := []int{1, 2, 3}; !slices.Equal(retries, want) {
		t.Errorf("delay function called with %v, want %v", retries, want)
	}
	if got := c.holders("k", m.Value()); got != 3 {
		t.Errorf("nodes holding the value = %d, want 3", got)
	}
}

func TestLockGivesUpAfterTries(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	delays := 0
	m := c.redsync().NewMutex("k",
		redsync.WithTries(4),
		redsync.WithRetryDelayFunc(func(int) time.Duration { delays++; return 0 }))

	err := m.Lock()
	var taken *redsync.ErrTaken
	if !errors.As(err, &taken) {
		t.Fatalf("Lock() = %v, want the last attempt's *ErrTaken", err)
	}
	if delays != 3 {
		t.Errorf("delays between 4 tries = %d, want 3", delays)
	}
}

func TestTryLockNeverRetries(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	m := c.redsync().NewMutex("k", redsync.WithRetryDelayFunc(func(int) time.Duration {
		t.Error("TryLock waited for a retry")
		return 0
	}))
	if err := m.TryLock(); err == nil {
		t.Fatal("TryLock() of a taken name = nil")
	}
}

func TestLockTooSlowForValidityFails(t *testing.T) {
	c := newCluster(t, 3)
	// Load the scripts first, so that each request below is one call.
	rs := c.redsync()
	warm := rs.NewMutex("warm")
	mustLock(t, warm)
	warm.Unlock()
	// Every node answers within the round timeout (990ms) but after the
	// validity (1s - 500ms - 502ms drift) is gone.
	for _, f := range c.faults {
		f.Delay(500 * time.Millisecond)
	}
	m := rs.NewMutex("k",
		redsync.WithExpiry(time.Second),
		redsync.WithDriftFactor(0.5),
		redsync.WithTimeoutFactor(0.99))

	if err := m.TryLock(); err != redsync.ErrFailed {
		t.Fatalf("TryLock() = %v, want ErrFailed", err)
	}
	if got := c.keyCount(); got != 0 {
		t.Errorf("keys left after the failed attempt = %d, want 0", got)
	}
}

// TestLockEndedByContext: as in go-redsync/redsync, a LockContext whose
// context ends returns ErrFailed itself (callers compare it with ==), and a
// TryLockContext the failure of its one attempt, which matches ctx.Err().
func TestLockEndedByContext(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lock  func(*redsync.Mutex, context.Context) error
		check func(error) bool
		want  string
	}{
		{"LockContext", (*redsync.Mutex).LockContext,
			func(err error) bool { return err == redsync.ErrFailed }, "ErrFailed itself"},
		{"TryLockContext", (*redsync.Mutex).TryLockContext,
			func(err error) bool { return errors.Is(err, context.Canceled) }, "an error matching context.Canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Node 0 grants; nodes 1 and 2 hang until the caller gives up,
			// which it does once node 0 has set the key.
			var once sync.Once
			c.faults[1].OnCall(func(string) {
				once.Do(func() {
					waitFor(t, func() bool { return c.servers[0].Exists("k") })
					cancel()
				})
			})
			c.setFaults(faults.Pass, faults.Hang, faults.Hang)
			m := c.redsync().NewMutex("k")

			if err := tc.lock(m, ctx); !tc.check(err) {
				t.Errorf("error = %v, want %s", err, tc.want)
			}
			if got := len(c.servers[0].Keys()); got != 0 {
				t.Errorf("keys left on the granting node = %d, want 0: cleanup must outlive the context", got)
			}
		})
	}
}

func TestLockContextCancelledBeforeStart(t *testing.T) {
	c := newCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := c.redsync().NewMutex("k")
	if err := m.LockContext(ctx); err != redsync.ErrFailed {
		t.Errorf("LockContext(cancelled) = %v, want ErrFailed itself", err)
	}
	if err := m.TryLockContext(ctx); !errors.Is(err, redsync.ErrFailed) || !errors.Is(err, context.Canceled) {
		t.Errorf("TryLockContext(cancelled) = %v, want ErrFailed and context.Canceled", err)
	}
	if got := c.calls(); got != 0 {
		t.Errorf("calls to the nodes = %d, want 0", got)
	}
}

func TestLockContextCancelledWhileWaiting(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := c.redsync().NewMutex("k", redsync.WithRetryDelayFunc(func(int) time.Duration {
		cancel()
		return time.Hour
	}))
	if err := m.LockContext(ctx); err != redsync.ErrFailed {
		t.Errorf("LockContext() = %v, want ErrFailed itself", err)
	}
}

func TestNilContextIsBackground(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k")
	var ctx context.Context
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("LockContext(nil) = %v", err)
	}
	if ok, err := m.ExtendContext(ctx); !ok || err != nil {
		t.Errorf("ExtendContext(nil) = %v, %v", ok, err)
	}
	if ok, err := m.ValidContext(ctx); !ok || err != nil {
		t.Errorf("ValidContext(nil) = %v, %v", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Errorf("UnlockContext(nil) = %v, %v", ok, err)
	}
}

func TestEachAttemptUsesAFreshValue(t *testing.T) {
	c := newCluster(t, 3)
	c.set(t, 3, "k", "theirs", time.Minute)
	var values []string
	m := c.redsync().NewMutex("k",
		redsync.WithTries(3),
		redsync.WithRetryDelay(0),
		redsync.WithGenValueFunc(func() (string, error) {
			v := fmt.Sprint("v", len(values))
			values = append(values, v)
			return v, nil
		}))
	m.Lock()
	if want := []string{"v0", "v1", "v2"}; !slices.Equal(values, want) {
		t.Errorf("values drawn = %v, want %v", values, want)
	}
}

func TestGenValueFunc(t *testing.T) {
	errBroken := errors.New("no entropy")
	for _, tc := range []struct {
		name    string
		gen     func() (string, error)
		wantErr func(error) bool
	}{
		{"custom value", func() (string, error) { return "mine", nil }, func(err error) bool { return err == nil }},
		{"error", func() (string, error) { return "", errBroken }, func(err error) bool { return errors.Is(err, errBroken) }},
		{"empty value", func() (string, error) { return "", nil }, func(err error) bool { return err != nil && !errors.Is(err, redsync.ErrFailed) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			m := c.redsync().NewMutex("k", redsync.WithGenValueFunc(tc.gen))
			err := m.Lock()
			if !tc.wantErr(err) {
				t.Fatalf("Lock() = %v", err)
			}
			if err == nil && c.holders("k", "mine") != 3 {
				t.Errorf("custom value not stored on every node")
			}
			if err != nil && c.calls() != 0 {
				t.Errorf("calls to the nodes = %d, want 0", c.calls())
			}
		})
	}
}

func TestNoScriptIsRecovered(t *testing.T) {
	c := newCluster(t, 3)
	m := c.redsync().NewMutex("k")
	mustLock(t, m)
	for _, f := range c.faults {
		f.ForgetScripts(true)
	}
	if ok, err := m.Extend(); !ok || err != nil {
		t.Errorf("Extend() after SCRIPT FLUSH = %v, %v", ok, err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Errorf("Unlock() after SCRIPT FLUSH = %v, %v", ok, err)
	}
}

func TestMutualExclusion(t *testing.T) {
	c := newCluster(t, 3)
	rs := c.redsync()
	var inside, overlaps, locked atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			m := rs.NewMutex("shared",
				redsync.WithTries(1000),
				redsync.WithRetryDelay(time.Millisecond))
			for range 3 {
				if err := m.Lock(); err != nil {
					t.Errorf("Lock() = %v", err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				locked.Add(1)
				inside.Add(-1)
				if ok, err := m.Unlock(); !ok {
					t.Errorf("Unlock() = %v, %v", ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Errorf("%d locks overlapped", overlaps.Load())
	}
	if got := locked.Load(); got != 24 {
		t.Errorf("locks taken = %d, want 24", got)
	}
}
