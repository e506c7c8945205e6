package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// A Client not made by New, the zero value or a nil pointer (what a failed
// New returns), refuses every call with ErrInvalidArgument instead of
// panicking.
func TestClientNotMadeByNewIsRefused(t *testing.T) {
	ctx := context.Background()
	var zero redlock.Client
	var nilClient *redlock.Client
	for _, tt := range []struct {
		name   string
		client *redlock.Client
		want   string
	}{
		{"zero Client", &zero, "redlock: invalid argument: Client not made by New"},
		{"nil *Client", nilClient, "redlock: invalid argument: nil *Client"},
	} {
		c := tt.client
		calls := map[string]func() error{
			"Lock":         func() error { _, err := c.Lock(ctx, "k", time.Second); return err },
			"TryLock":      func() error { _, err := c.TryLock(ctx, "k", time.Second); return err },
			"LockMulti":    func() error { _, err := c.LockMulti(ctx, []string{"a", "b"}, time.Second); return err },
			"TryLockMulti": func() error { _, err := c.TryLockMulti(ctx, []string{"a", "b"}, time.Second); return err },
			"Resume":       func() error { _, err := c.Resume(ctx, "k", "v", time.Second); return err },
		}
		calls["Do"] = func() error { return c.Do(ctx, "k", time.Second, func(context.Context) error { return nil }) }
		calls["DoMulti"] = func() error {
			return c.DoMulti(ctx, []string{"a", "b"}, time.Second, func(context.Context) error { return nil })
		}
		for name, call := range calls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				checkInvalid(t, call(), tt.want)
			})
		}
	}
}

// Keys have no size limit; error messages do. A key is cut after 64 bytes
// and followed by its length, wherever an error quotes it.
func TestErrorsCutLongKeys(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := context.Background()
	long := strings.Repeat("k", 1<<20)
	cut := `"` + strings.Repeat("k", 64) + `..." (1048576 bytes)`
	for _, s := range c.servers {
		s.Set(long, "other")
	}
	calls := map[string]func() error{
		"quorum error": func() error { _, err := client.TryLock(ctx, long, time.Second); return err },
		"key given twice": func() error {
			_, err := client.TryLockMulti(ctx, []string{long, long}, time.Second)
			return err
		},
		"reserved name": func() error {
			_, err := client.TryLock(ctx, long+":fencing-token", time.Second)
			return err
		},
		"fenced key without a slot": func() error {
			fenced := c.client(t, redlock.WithFencing())
			_, err := fenced.TryLock(ctx, long+"}", time.Second)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if err == nil {
				t.Fatal("got no error")
			}
			msg := err.Error()
			if len(msg) > 1000 || !strings.Contains(msg, "..."+`"`) || !strings.Contains(msg, "bytes)") {
				t.Errorf("error of %d bytes, want the key cut: %.300s", len(msg), msg)
			}
			if name == "quorum error" && !strings.Contains(msg, cut) {
				t.Errorf("error %.300s, want the key shown as %s", msg, cut)
			}
		})
	}
}

// A call whose context ends says so once: the node errors that the end of
// the context caused are not followed by the same words again.
func TestErrorsDoNotRepeatTheContextsError(t *testing.T) {
	c := newCluster(t, 3)
	// The nodes hang for longer than the call's context lasts, so their
	// errors are the context's.
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	c.setFaults(faults.Hang, faults.Hang, faults.Hang)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := client.Lock(ctx, "k", time.Hour)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want ErrNotAcquired and context.DeadlineExceeded", err)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Errorf("Lock = %v, want a *QuorumError in the chain", err)
	}
	if rep := repeated(err.Error()); rep != "" {
		t.Errorf("error %q repeats %q", err, rep)
	}
}

// repeated returns a part of msg, split at ": ", that follows itself, or "".
func repeated(msg string) string {
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] {
			return parts[i]
		}
	}
	return ""
}

func TestNilErrorValuesDoNotPanic(t *testing.T) {
	for _, err := range []error{(*redlock.NodeError)(nil), (*redlock.QuorumError)(nil)} {
		if got := err.Error(); !strings.HasPrefix(got, "redlock: nil ") {
			t.Errorf("%T(nil).Error() = %q, want it to name a nil value", err, got)
		}
		if errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("a nil %T matches ErrNotAcquired", err)
		}
		var ne *redlock.NodeError
		_ = errors.As(err, &ne)
	}
}
