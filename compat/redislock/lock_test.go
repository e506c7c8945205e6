package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/compat/redislock"
	"github.com/locksmith-go/locksmith/internal/faults"
)

func TestTTLComesFromTheServer(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	l := mustObtain(t, s.client, "k", time.Minute, nil)

	for _, step := range []struct {
		forward time.Duration
		want    time.Duration
	}{
		{0, time.Minute},
		{20 * time.Second, 40 * time.Second},
		{40 * time.Second, 0},
	} {
		s.FastForward(step.forward)
		got, err := l.TTL(ctx)
		if err != nil || got != step.want {
			t.Errorf("after %v more: TTL() = %v, %v, want %v, nil", step.forward, got, err, step.want)
		}
	}
}

func TestTTLOfLockTakenOverIsZero(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, nil)
	s.hold(t, "k", "theirs", time.Hour)
	if got, err := l.TTL(context.Background()); got != 0 || err != nil {
		t.Errorf("TTL() = %v, %v, want 0, nil", got, err)
	}
}

func TestRefresh(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meddle  func(*testing.T, *server)
		wantErr error
		value   string // left at the key; "mine" stands for the lock's value
		ttl     time.Duration
	}{
		{"held", func(*testing.T, *server) {}, nil, "mine", 5 * time.Minute},
		{"expired", func(_ *testing.T, s *server) { s.FastForward(time.Minute) }, redislock.ErrNotObtained, "", 0},
		{"taken over", func(t *testing.T, s *server) { s.hold(t, "k", "theirs", time.Hour) }, redislock.ErrNotObtained, "theirs", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			l := mustObtain(t, s.client, "k", time.Minute, nil)
			tc.meddle(t, s)

			if err := l.Refresh(context.Background(), 5*time.Minute, nil); err != tc.wantErr {
				t.Fatalf("Refresh() = %v, want %v", err, tc.wantErr)
			}
			want := tc.value
			if want == "mine" {
				want = l.Token()
			}
			if got := s.value("k"); got != want {
				t.Errorf("stored value = %q, want %q", got, want)
			}
			if got := s.TTL("k"); got != tc.ttl {
				t.Errorf("TTL on the server = %v, want %v", got, tc.ttl)
			}
		})
	}
}

func TestRefreshRetriesFailedRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retry   func(*server) redislock.RetryStrategy
		wantErr func(error) bool
	}{
		{"no retry", func(*server) redislock.RetryStrategy { return nil },
			func(err error) bool { return errors.Is(err, faults.ErrInjected) }},
		{"retry heals", func(s *server) redislock.RetryStrategy {
			return &strategy{next: func(int) time.Duration { s.faults.Set(faults.Pass); return time.Millisecond }}
		}, func(err error) bool { return err == nil }},
		{"retries run out", func(*server) redislock.RetryStrategy {
			return redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2)
		}, func(err error) bool {
			return errors.Is(err, faults.ErrInjected) && !errors.Is(err, redislock.ErrNotObtained)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			l := mustObtain(t, s.client, "k", time.Minute, nil)
			s.faults.Set(faults.Fail)
			err := l.Refresh(context.Background(), 5*time.Minute, &redislock.Options{RetryStrategy: tc.retry(s)})
			if !tc.wantErr(err) {
				t.Errorf("Refresh() = %v", err)
			}
		})
	}
}

func TestRefreshRetriesEndWithTheContext(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, nil)
	s.faults.Set(faults.Fail)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	retry := &strategy{next: func(int) time.Duration { cancel(); return time.Hour }}
	err := l.Refresh(ctx, time.Minute, &redislock.Options{RetryStrategy: retry})
	if !errors.Is(err, faults.ErrInjected) || !errors.Is(err, context.Canceled) {
		t.Errorf("Refresh() = %v, want the last error and context.Canceled", err)
	}
}

func TestRefreshRefusesBadTTL(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, nil)
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
		if err := l.Refresh(context.Background(), ttl, nil); err == nil || errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Refresh(%v) = %v, want a descriptive error", ttl, err)
		}
	}
	if got := s.TTL("k"); got != time.Minute {
		t.Errorf("TTL on the server = %v, want it untouched at 1m", got)
	}
}

func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meddle  func(*testing.T, *server, *redislock.Lock)
		wantErr error
		left    string
	}{
		{"held", func(*testing.T, *server, *redislock.Lock) {}, nil, ""},
		{"released already", func(t *testing.T, _ *server, l *redislock.Lock) {
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("first Release() = %v", err)
			}
		}, redislock.ErrLockNotHeld, ""},
		{"expired", func(_ *testing.T, s *server, _ *redislock.Lock) { s.FastForward(time.Minute) }, redislock.ErrLockNotHeld, ""},
		{"taken over", func(t *testing.T, s *server, _ *redislock.Lock) { s.hold(t, "k", "theirs", time.Hour) }, redislock.ErrLockNotHeld, "theirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			l := mustObtain(t, s.client, "k", time.Minute, nil)
			tc.meddle(t, s, l)
			if err := l.Release(context.Background()); err != tc.wantErr {
				t.Errorf("Release() = %v, want %v", err, tc.wantErr)
			}
			if got := s.value("k"); got != tc.left {
				t.Errorf("value left = %q, want %q", got, tc.left)
			}
		})
	}
}

func TestReleaseIsNotCancelledWithTheCaller(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release(cancelled) = %v", err)
	}
	if s.Exists("k") {
		t.Error("key still exists")
	}
}

func TestObtainMultiIsAllOrNothing(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	keys := []string{"{o}:pay", "{o}:ship", "{o}:mail"}
	s.hold(t, "{o}:ship", "theirs", time.Minute)

	if _, err := s.client.ObtainMulti(ctx, keys, time.Minute, nil); err != redislock.ErrNotObtained {
		t.Fatalf("ObtainMulti() with one key held = %v, want ErrNotObtained", err)
	}
	if s.Exists("{o}:pay") || s.Exists("{o}:mail") {
		t.Error("ObtainMulti() set free keys although it failed")
	}

	s.Del("{o}:ship")
	l, err := s.client.ObtainMulti(ctx, keys, time.Minute, &redislock.Options{Metadata: "m"})
	if err != nil {
		t.Fatalf("ObtainMulti() = %v", err)
	}
	if got := l.Key(); got != keys[0] {
		t.Errorf("Key() = %q, want the first key %q", got, keys[0])
	}
	for _, k := range keys {
		if got := s.value(k); got != l.Token()+"m" {
			t.Errorf("%s = %q, want %q", k, got, l.Token()+"m")
		}
	}
}

func TestMultiKeyLock(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	keys := []string{"a", "b"}
	l, err := s.client.ObtainMulti(ctx, keys, time.Minute, nil)
	if err != nil {
		t.Fatalf("ObtainMulti() = %v", err)
	}

	// TTL is the least of the keys' TTLs.
	s.SetTTL("b", 10*time.Second)
	if got, err := l.TTL(ctx); got != 10*time.Second || err != nil {
		t.Errorf("TTL() = %v, %v, want 10s", got, err)
	}

	if err := l.Refresh(ctx, 2*time.Minute, nil); err != nil {
		t.Fatalf("Refresh() = %v", err)
	}
	for _, k := range keys {
		if got := s.TTL(k); got != 2*time.Minute {
			t.Errorf("%s: TTL = %v, want 2m", k, got)
		}
	}

	// One key lost: Refresh touches none, TTL is 0, Release reports it.
	s.hold(t, "b", "theirs", time.Hour)
	if err := l.Refresh(ctx, 5*time.Minute, nil); err != redislock.ErrNotObtained {
		t.Errorf("Refresh() with a key lost = %v, want ErrNotObtained", err)
	}
	if got := s.TTL("a"); got != 2*time.Minute {
		t.Errorf("a: TTL = %v after a refused Refresh, want 2m", got)
	}
	if got, err := l.TTL(ctx); got != 0 || err != nil {
		t.Errorf("TTL() with a key lost = %v, %v, want 0, nil", got, err)
	}
	if err := l.Release(ctx); err != redislock.ErrLockNotHeld {
		t.Errorf("Release() with a key lost = %v, want ErrLockNotHeld", err)
	}
	if got := s.value("b"); got != "theirs" {
		t.Errorf("b = %q, want the other owner's value left alone", got)
	}
}

func TestObtainMultiWithTokenAfterSomeKeysExpired(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	l, err := s.client.ObtainMulti(ctx, []string{"a", "b"}, time.Minute, nil)
	if err != nil {
		t.Fatalf("ObtainMulti() = %v", err)
	}
	s.Del("b")
	again, err := s.client.ObtainMulti(ctx, []string{"a", "b"}, time.Minute, &redislock.Options{Token: l.Token()})
	if err != nil {
		t.Fatalf("ObtainMulti() with the token = %v", err)
	}
	if s.value("a") != again.Token() || s.value("b") != again.Token() {
		t.Errorf("keys = %q, %q, want both %q", s.value("a"), s.value("b"), again.Token())
	}
}

func TestNilAndZeroLock(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		lock *redislock.Lock
	}{
		{"nil", nil},
		{"zero", &redislock.Lock{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lock
			if l.Key() != "" || l.Token() != "" || l.Metadata() != "" || len(l.Keys()) != 0 {
				t.Errorf("Key, Token, Metadata, Keys = %q, %q, %q, %q, want empty", l.Key(), l.Token(), l.Metadata(), l.Keys())
			}
			if _, err := l.TTL(ctx); err != redislock.ErrLockNotHeld {
				t.Errorf("TTL() = %v, want ErrLockNotHeld", err)
			}
			if err := l.Refresh(ctx, time.Minute, nil); err != redislock.ErrNotObtained {
				t.Errorf("Refresh() = %v, want ErrNotObtained", err)
			}
			if err := l.Release(ctx); err != redislock.ErrLockNotHeld {
				t.Errorf("Release() = %v, want ErrLockNotHeld", err)
			}
		})
	}
}

func TestLockMethodsRefuseNilContext(t *testing.T) {
	s := newServer(t)
	l := mustObtain(t, s.client, "k", time.Minute, nil)
	var ctx context.Context
	if _, err := l.TTL(ctx); err == nil {
		t.Error("TTL(nil) = nil error")
	}
	if err := l.Refresh(ctx, time.Minute, nil); err == nil || errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh(nil) = %v, want a descriptive error", err)
	}
	if err := l.Release(ctx); err == nil || errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release(nil) = %v, want a descriptive error", err)
	}
}
