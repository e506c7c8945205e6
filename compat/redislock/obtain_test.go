package redislock_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
)

func TestObtainStoresTokenAndMetadata(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "report", time.Minute, &redislock.Options{Metadata: "host-7"})

	if got := l.Key(); got != "report" {
		t.Errorf("Key() = %q, want %q", got, "report")
	}
	if got := l.Keys(); len(got) != 1 || got[0] != "report" {
		t.Errorf("Keys() = %q, want [report]", got)
	}
	if got := l.Metadata(); got != "host-7" {
		t.Errorf("Metadata() = %q, want %q", got, "host-7")
	}
	token := l.Token()
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != 16 || len(token) != 22 {
		t.Errorf("Token() = %q, want 22 characters of unpadded URL-safe base64 for 16 bytes", token)
	}
	if got, want := s.value("report"), token+"host-7"; got != want {
		t.Errorf("stored value = %q, want token+metadata %q", got, want)
	}
	if got := s.TTL("report"); got != time.Minute {
		t.Errorf("TTL on the server = %v, want 1m", got)
	}
	if l.Client != s.client {
		t.Error("Lock.Client is not the Client that obtained it")
	}
}

func TestTokensAreFresh(t *testing.T) {
	s := newServer(t)
	seen := map[string]bool{}
	for range 20 {
		l := mustObtain(t, s.client, "k", time.Minute, nil)
		if seen[l.Token()] {
			t.Fatalf("token %q drawn twice", l.Token())
		}
		seen[l.Token()] = true
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

func TestObtainOfHeldKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     *redislock.Options
		retries int
	}{
		{"nil options", nil, 0},
		{"no strategy", &redislock.Options{}, 0},
		{"NoRetry", &redislock.Options{RetryStrategy: redislock.NoRetry()}, 0},
		{"LimitRetry", &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 3)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			s.hold(t, "k", "theirs", time.Minute)
			tries := 0
			s.faults.OnCall(func(method string) {
				if method != "ScriptLoad" {
					tries++
				}
			})
			_, err := s.client.Obtain(context.Background(), "k", time.Minute, tc.opt)
			if err != redislock.ErrNotObtained {
				t.Fatalf("Obtain() = %v, want ErrNotObtained", err)
			}
			if tries != tc.retries+1 {
				t.Errorf("tries = %d, want %d", tries, tc.retries+1)
			}
			if got := s.value("k"); got != "theirs" {
				t.Errorf("stored value = %q, want the other owner's", got)
			}
		})
	}
}

func TestObtainRetriesUntilTheKeyIsFree(t *testing.T) {
	s := newServer(t)
	s.hold(t, "k", "theirs", time.Minute)
	retry := &strategy{next: func(call int) time.Duration {
		if call == 2 {
			s.Del("k")
		}
		return time.Millisecond
	}}
	l := mustObtain(t, s.client, "k", time.Minute, &redislock.Options{RetryStrategy: retry})
	if retry.calls != 2 {
		t.Errorf("NextBackoff calls = %d, want 2", retry.calls)
	}
	if got := s.value("k"); got != l.Token() {
		t.Errorf("stored value = %q, want the token %q", got, l.Token())
	}
}

func TestObtainRetriesEndWithTheContext(t *testing.T) {
	s := newServer(t)
	s.hold(t, "k", "theirs", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	retry := &strategy{next: func(int) time.Duration {
		cancel()
		return time.Hour
	}}
	_, err := s.client.Obtain(ctx, "k", time.Minute, &redislock.Options{RetryStrategy: retry})
	if err != context.Canceled {
		t.Errorf("Obtain() = %v, want context.Canceled itself, as bsm/redislock returns it", err)
	}
}

func TestObtainRequestEndedByTheContext(t *testing.T) {
	s := newServer(t)
	s.faults.Set(faults.Hang)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := s.client.Obtain(ctx, "k", time.Minute, nil)
	if err != context.DeadlineExceeded {
		t.Errorf("Obtain() = %v, want context.DeadlineExceeded itself", err)
	}
}

func TestObtainWithoutDeadlineStopsAfterTTL(t *testing.T) {
	s := newServer(t)
	s.hold(t, "k", "theirs", time.Minute)
	_, err := s.client.Obtain(context.Background(), "k", 50*time.Millisecond,
		&redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
	if err != context.DeadlineExceeded {
		t.Errorf("Obtain() with endless retries = %v, want context.DeadlineExceeded itself, as bsm/redislock returns it", err)
	}
}

func TestObtainServerErrorEndsTries(t *testing.T) {
	s := newServer(t)
	s.faults.Set(faults.Fail)
	retry := &strategy{next: func(int) time.Duration { return time.Millisecond }}
	_, err := s.client.Obtain(context.Background(), "k", time.Minute, &redislock.Options{RetryStrategy: retry})
	if !errors.Is(err, faults.ErrInjected) {
		t.Errorf("Obtain() = %v, want the connection's error", err)
	}
	if retry.calls != 0 {
		t.Errorf("NextBackoff calls = %d, want 0", retry.calls)
	}
}

func TestObtainWithTokenTakesTheLockAgain(t *testing.T) {
	s := newServer(t)
	first := mustObtain(t, s.client, "k", time.Minute, &redislock.Options{Metadata: "a"})
	s.FastForward(40 * time.Second)

	again := mustObtain(t, s.client, "k", 2*time.Minute, &redislock.Options{Token: first.Token(), Metadata: "b"})
	if got := again.Token(); got != first.Token() {
		t.Errorf("Token() = %q, want %q", got, first.Token())
	}
	if got, want := s.value("k"), first.Token()+"b"; got != want {
		t.Errorf("stored value = %q, want %q: the metadata is replaced", got, want)
	}
	if got := s.TTL("k"); got != 2*time.Minute {
		t.Errorf("TTL = %v, want the new 2m", got)
	}
	// The first handle's value (token+"a") is no longer stored.
	if err := first.Release(context.Background()); err != redislock.ErrLockNotHeld {
		t.Errorf("Release() of the replaced lock = %v, want ErrLockNotHeld", err)
	}
	if err := again.Release(context.Background()); err != nil {
		t.Errorf("Release() = %v", err)
	}
}

func TestObtainWithAnotherTokenIsRefused(t *testing.T) {
	s := newServer(t)
	mustObtain(t, s.client, "k", time.Minute, nil)
	_, err := s.client.Obtain(context.Background(), "k", time.Minute, &redislock.Options{Token: "someone-else-entirely"})
	if err != redislock.ErrNotObtained {
		t.Errorf("Obtain() with another token = %v, want ErrNotObtained", err)
	}
}

func TestObtainWithCustomTokenOnFreeKey(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, &redislock.Options{Token: "my-token", Metadata: "{json}"})
	if got := s.value("k"); got != "my-token{json}" {
		t.Errorf("stored value = %q, want %q", got, "my-token{json}")
	}
	if l.Token() != "my-token" || l.Metadata() != "{json}" {
		t.Errorf("Token(), Metadata() = %q, %q", l.Token(), l.Metadata())
	}
}

// A lock stored by bsm/redislock is a key holding a 22-character token and
// the metadata; the compat client must respect it and take it over given
// the token.
func TestLockOfAnotherLibrary(t *testing.T) {
	const token = "AAECAwQFBgcICQoLDA0ODw"
	s := newServer(t)
	s.hold(t, "jobs", token+"worker-3", time.Minute)

	if _, err := s.client.Obtain(context.Background(), "jobs", time.Minute, nil); err != redislock.ErrNotObtained {
		t.Fatalf("Obtain() of a key held by another library = %v, want ErrNotObtained", err)
	}
	l := mustObtain(t, s.client, "jobs", time.Minute, &redislock.Options{Token: token, Metadata: "worker-3"})
	if got := l.Metadata(); got != "worker-3" {
		t.Errorf("Metadata() = %q", got)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release() = %v", err)
	}
	if s.Exists("jobs") {
		t.Error("key still exists after Release")
	}
}

// TestObtainShortcuts: the package-level functions take a go-redis client,
// as bsm/redislock's do.
func TestObtainShortcuts(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	rdb := goredislib.NewClient(&goredislib.Options{Addr: s.Addr()})
	defer rdb.Close()
	l, err := redislock.Obtain(ctx, rdb, "a", time.Minute, nil)
	if err != nil || l.Key() != "a" {
		t.Fatalf("Obtain() = %v, %v", l, err)
	}
	m, err := redislock.ObtainMulti(ctx, rdb, []string{"b", "c"}, time.Minute, nil)
	if err != nil || len(m.Keys()) != 2 {
		t.Fatalf("ObtainMulti() = %v, %v", m, err)
	}
	if got := len(s.Keys()); got != 3 {
		t.Errorf("keys = %d, want 3", got)
	}
}

// TestNewTakesAGoRedisClient: a program written for bsm/redislock hands New
// its go-redis client; the lock it gets is stored and released there.
func TestNewTakesAGoRedisClient(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	rdb := goredislib.NewClient(&goredislib.Options{Addr: s.Addr()})
	defer rdb.Close()
	var client redislock.RedisClient = rdb // the same interface as bsm/redislock's
	l, err := redislock.New(client).Obtain(ctx, "k", time.Minute, &redislock.Options{Metadata: "m"})
	if err != nil {
		t.Fatalf("Obtain() = %v", err)
	}
	if got, want := s.value("k"), l.Token()+"m"; got != want {
		t.Errorf("stored value = %q, want %q", got, want)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release() = %v", err)
	}
	if s.Exists("k") {
		t.Error("key still exists after Release")
	}
}

// A Ring hands the keys of a shard it counts as down to another shard,
// where a second owner would obtain a lock the first still holds: Obtain
// through one fails, naming the Ring, and sets no key.
func TestNewRefusesARing(t *testing.T) {
	s := newServer(t)
	ring := goredislib.NewRing(&goredislib.RingOptions{Addrs: map[string]string{"only": s.Addr()}})
	defer ring.Close()
	_, err := redislock.New(ring).Obtain(context.Background(), "k", time.Minute, nil)
	if err == nil || !strings.Contains(err.Error(), "Ring") {
		t.Errorf("Obtain through a Ring = %v; want an error naming the Ring", err)
	}
	if s.Exists("k") {
		t.Error("the key exists after Obtain through a Ring")
	}
}

func TestObtainRecoversFromNoScript(t *testing.T) {
	s := newServer(t)
	mustObtain(t, s.client, "a", time.Minute, nil)
	s.faults.ForgetScripts(true)
	l := mustObtain(t, s.client, "b", time.Minute, nil)
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release() = %v", err)
	}
}

func TestBadInput(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"nil client", func() error {
			_, err := redislock.New(nil).Obtain(ctx, "k", time.Minute, nil)
			return err
		}},
		{"nil *redis.Client", func() error {
			var rdb *goredislib.Client
			_, err := redislock.New(rdb).Obtain(ctx, "k", time.Minute, nil)
			return err
		}},
		{"nil conn", func() error {
			_, err := redislock.NewFromConn(nil).Obtain(ctx, "k", time.Minute, nil)
			return err
		}},
		{"nil package-level client", func() error {
			_, err := redislock.Obtain(ctx, nil, "k", time.Minute, nil)
			return err
		}},
		{"nil Client", func() error {
			var c *redislock.Client
			_, err := c.Obtain(ctx, "k", time.Minute, nil)
			return err
		}},
		{"zero Client", func() error {
			var c redislock.Client
			_, err := c.Obtain(ctx, "k", time.Minute, nil)
			return err
		}},
		{"nil Context", func() error {
			_, err := s.client.Obtain(nilCtx, "k", time.Minute, nil)
			return err
		}},
		{"zero TTL", func() error {
			_, err := s.client.Obtain(ctx, "k", 0, nil)
			return err
		}},
		{"sub-millisecond TTL", func() error {
			_, err := s.client.Obtain(ctx, "k", 999*time.Microsecond, nil)
			return err
		}},
		{"no keys", func() error {
			_, err := s.client.ObtainMulti(ctx, nil, time.Minute, nil)
			return err
		}},
		{"key twice", func() error {
			_, err := s.client.ObtainMulti(ctx, []string{"a", "b", "a"}, time.Minute, nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("error = %v, want a descriptive error", err)
			}
		})
	}
	if got := s.faults.Calls(); got != 0 {
		t.Errorf("calls to the server = %d, want 0", got)
	}
}

// stallAfterApply is a driver.Conn that forwards the first script call and
// then holds its reply until the call's context ends: a request that
// reached the server and applied, whose caller gave up before the answer.
type stallAfterApply struct {
	driver.Conn
	stalled atomic.Bool
}

func (c *stallAfterApply) stall(ctx context.Context, reply any, err error) (any, error) {
	if err != nil || !c.stalled.CompareAndSwap(false, true) {
		return reply, err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c *stallAfterApply) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	reply, err := c.Conn.Eval(ctx, script, keys, args)
	return c.stall(ctx, reply, err)
}

func (c *stallAfterApply) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	reply, err := c.Conn.EvalSha(ctx, sha1, keys, args)
	return c.stall(ctx, reply, err)
}

// TestFailedObtainThatAppliedIsReleased: an Obtain whose script set the
// key on the server but whose reply never came back fails, and must not
// leave the key behind under a token its caller never learned: the next
// Obtain of the key succeeds at once.
func TestFailedObtainThatAppliedIsReleased(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(*server) *redislock.Client
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{"reply lost", func(s *server) *redislock.Client {
			var first atomic.Bool
			s.faults.Choose(func(method string) faults.Fault {
				if method != "ScriptLoad" && first.CompareAndSwap(false, true) {
					return faults.Fault{Mode: faults.LoseReply}
				}
				return faults.Fault{}
			})
			return s.client
		}, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, faults.ErrInjected},
		{"deadline after the write", func(s *server) *redislock.Client {
			return redislock.NewFromConn(&stallAfterApply{Conn: s.faults})
		}, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			client := tc.fault(s)
			ctx, cancel := tc.ctx()
			defer cancel()
			l, err := client.Obtain(ctx, "k", time.Minute, nil)
			if !errors.Is(err, tc.wantErr) || l != nil {
				t.Fatalf("Obtain() = %v, %v; want nil, %v", l, err, tc.wantErr)
			}
			if got := s.value("k"); got != "" {
				t.Errorf("after the failed Obtain the key holds %q for %v, want it released", got, s.TTL("k"))
			}
			if _, err := s.client.Obtain(context.Background(), "k", time.Minute, nil); err != nil {
				t.Errorf("Obtain() after the failed one = %v, want the key free", err)
			}
		})
	}
}

// TestFailedObtainWithTokenKeepsTheKey: with Options.Token the caller
// knows the value, and the key may be its own lock from an earlier Obtain,
// so a failed Obtain leaves it; the caller takes it again with the token.
func TestFailedObtainWithTokenKeepsTheKey(t *testing.T) {
	s := newServer(t)
	opt := &redislock.Options{Token: "my-token"}
	mustObtain(t, s.client, "k", time.Minute, opt)
	s.faults.Set(faults.LoseReply)
	if _, err := s.client.Obtain(context.Background(), "k", time.Minute, opt); !errors.Is(err, faults.ErrInjected) {
		t.Fatalf("Obtain() = %v, want %v", err, faults.ErrInjected)
	}
	s.faults.Set(faults.Pass)
	if got := s.value("k"); got != "my-token" {
		t.Errorf("value after the failed Obtain = %q, want %q", got, "my-token")
	}
	if _, err := s.client.Obtain(context.Background(), "k", time.Minute, opt); err != nil {
		t.Errorf("Obtain() with the token again = %v", err)
	}
}
