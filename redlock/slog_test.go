package redlock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// recordHandler is a slog.Handler that keeps every record.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// lines returns each record as "LEVEL message", with the attributes asked
// for as key=value.
func (h *recordHandler) lines(keys ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		line := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			if slices.Contains(keys, a.Key) {
				line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
			}
			return true
		})
		out = append(out, line)
	}
	return out
}

func TestLoggerLevelsAndAttributes(t *testing.T) {
	c := newCluster(t, 3)
	h := &recordHandler{}
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithLogger(slog.New(h)))
	ctx := context.Background()
	l := mustLock(t, client, "k", time.Second)
	c.setFaults(faults.Pass, faults.Fail)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	c.setFaults(faults.Fail, faults.Fail)
	if _, err := client.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 of 3 nodes failing: got %v", err)
	}
	wantEvents(t, h.lines("op", "key", "node", "granted", "refused", "attempt", "reason"), []string{
		"DEBUG redlock: attempt won the lock key=k granted=3 refused=0 attempt=1",
		"DEBUG redlock: lock acquired key=k",
		"WARN redlock: node error op=unlock key=k node=1",
		"DEBUG redlock: lock released key=k granted=2 refused=0",
		"WARN redlock: node error op=lock key=k node=0",
		"WARN redlock: node error op=lock key=k node=1",
		"WARN redlock: attempt failed key=k granted=1 refused=0 attempt=1",
		"WARN redlock: lock not acquired key=k reason=node_errors",
	})
	// The value appears as a short prefix only.
	for _, line := range h.lines("value") {
		if strings.Contains(line, l.Value()) {
			t.Errorf("a record shows the full lock value: %s", line)
		}
	}
}

func TestNothingLoggedByDefault(t *testing.T) {
	h := &recordHandler{}
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	defer slog.SetDefault(prev)

	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout))
	l := mustLock(t, client, "k", time.Second)
	c.setFaults(faults.Fail)
	l.Unlock(context.Background())
	if got := h.lines(); len(got) != 0 {
		t.Errorf("a Client without WithLogger logged %q", got)
	}
}

func TestWithLoggerNil(t *testing.T) {
	c := newCluster(t, 1)
	if _, err := redlock.New(c.conns, redlock.WithLogger(nil)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("New with a nil logger: got %v, want ErrInvalidArgument", err)
	}
}

// TestLoggerDurationsReadable logs through a JSON handler and checks that
// every duration reads as time.Duration text ("1.2ms"), not as a number
// of nanoseconds.
func TestLoggerDurationsReadable(t *testing.T) {
	c := newCluster(t, 3)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	client := c.client(t, redlock.WaitForEveryNode(), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithLogger(logger))
	ctx := context.Background()
	l := mustLock(t, client, "k", time.Second)
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if _, err := client.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held key: got %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(buf.String()) {
		var record map[string]any
		if err := json.Unmarshal([]byte(line), &record); err != nil {
			t.Fatalf("a record is not JSON: %v: %s", err, line)
		}
		for _, key := range []string{"elapsed", "validity", "held"} {
			v, ok := record[key]
			if !ok {
				continue
			}
			seen[key] = true
			text, isText := v.(string)
			if _, err := time.ParseDuration(text); !isText || err != nil {
				t.Errorf("%s=%v (%T) in %q: want duration text such as \"1.5ms\"", key, v, v, record["msg"])
			}
		}
	}
	for _, key := range []string{"elapsed", "validity", "held"} {
		if !seen[key] {
			t.Errorf("no record has %s: %s", key, buf.String())
		}
	}
}
