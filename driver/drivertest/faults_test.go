package drivertest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// hub is an in-process pub/sub server for the fake Notifiers below.
type hub struct {
	mu   sync.Mutex
	subs map[string][]func(string)
}

func (h *hub) publish(channel, payload string) {
	h.mu.Lock()
	subs := slices.Clone(h.subs[channel])
	h.mu.Unlock()
	for _, deliver := range subs {
		deliver(payload)
	}
}

// hubConn is a Notifier on a hub whose Eval runs publishScript, or fails
// with evalErr when that is set.
type hubConn struct {
	hub     *hub
	evalErr error
}

func (c hubConn) Eval(_ context.Context, _ string, _, args []string) (any, error) {
	if c.evalErr != nil {
		return nil, c.evalErr
	}
	c.hub.publish(args[0], args[1])
	return int64(1), nil
}

func (c hubConn) EvalSha(context.Context, string, []string, []string) (any, error) {
	return nil, driver.ErrNoScript
}

func (c hubConn) ScriptLoad(context.Context, string) (string, error) {
	return "", errors.New("hubConn: no scripts")
}

func (c hubConn) Subscribe(_ context.Context, channel string, deliver func(string)) (func(), error) {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	if c.hub.subs == nil {
		c.hub.subs = make(map[string][]func(string))
	}
	c.hub.subs[channel] = append(c.hub.subs[channel], deliver)
	return func() {
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		delete(c.hub.subs, channel)
	}, nil
}

// NotifyQuiet judges the quiet subscription, not the commands of a client
// with a short read timeout: a Notifier whose own commands time out (a
// server slower to answer than that timeout, as on a loaded machine) still
// passes when its subscription keeps its connection and hears the message.
// The rule used to publish through the quiet client, and failed here with
// "publishing on ...: i/o timeout".
func TestNotifyQuietPublishesThroughAnotherConn(t *testing.T) {
	var h hub
	quiet := Faults{QuietNotifier: func(*testing.T) (driver.Conn, time.Duration, func() int) {
		timedOut := errors.New("read tcp: i/o timeout")
		return hubConn{hub: &h, evalErr: timedOut}, time.Millisecond, func() int { return 0 }
	}}
	newConn := func(*testing.T) driver.Conn { return hubConn{hub: &h} }
	if !t.Run("NotifyQuiet", func(t *testing.T) { testNotifyQuiet(t, newConn, config{faults: quiet}) }) {
		t.Error("NotifyQuiet failed for a Notifier whose subscription heard the message")
	}
}

// callReturns, on which the stall rules and HonorsDeadline rest, fails a
// call that is still running at its limit and one that returns a reply,
// and passes one that returns an error in time.
func TestCallReturns(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	newCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Millisecond)
	}
	tests := []struct {
		name string
		call func(ctx context.Context) (any, error)
		fail bool
	}{
		{"returns at ctx's end", func(ctx context.Context) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, false},
		{"ignores ctx", func(context.Context) (any, error) {
			<-release
			return nil, errors.New("released")
		}, true},
		{"returns a reply", func(context.Context) (any, error) { return "answered", nil }, true},
	}
	for _, tt := range tests {
		err := callReturns(tt.name, 100*time.Millisecond, newCtx, tt.call)
		if (err != nil) != tt.fail {
			t.Errorf("callReturns(%s) = %v; want a failure: %t", tt.name, err, tt.fail)
		}
	}
}

// honouring is a Conn that honours deadlines, as it says, over a server
// that Pause stops: while stopped, its calls return when their ctx ends.
type honouring struct {
	stopped *sync.RWMutex
}

func (c honouring) call(ctx context.Context, reply any) (any, error) {
	if c.stopped.TryRLock() {
		c.stopped.RUnlock()
		return reply, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c honouring) Eval(ctx context.Context, _ string, _, _ []string) (any, error) {
	return c.call(ctx, "answered")
}

func (c honouring) EvalSha(ctx context.Context, _ string, _, _ []string) (any, error) {
	return c.call(ctx, "answered")
}

func (c honouring) ScriptLoad(ctx context.Context, _ string) (string, error) {
	_, err := c.call(ctx, nil)
	return "0000000000000000000000000000000000000000", err
}

func (c honouring) HonorsDeadline() bool { return true }

func TestHonorsDeadlinePassesAConnThatDoes(t *testing.T) {
	var stopped sync.RWMutex
	f := Faults{Pause: func(*testing.T) func() {
		stopped.Lock()
		return stopped.Unlock
	}}
	newConn := func(*testing.T) driver.Conn { return honouring{&stopped} }
	checked := false // not when the rule skips, which ends its goroutine
	ok := t.Run("HonorsDeadline", func(t *testing.T) {
		testHonorsDeadline(t, newConn, config{faults: f})
		checked = true
	})
	if !ok || !checked {
		t.Errorf("HonorsDeadline passed: %t, checked: %t; want both for a Conn that returns at its ctx's deadline", ok, checked)
	}
}
