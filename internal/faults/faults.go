// Package faults wraps a driver.Conn so tests can make one node slow,
// failing, unreachable or forgetful on demand.
package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// ErrInjected is the error a node returns in Fail mode.
var ErrInjected = errors.New("faults: injected node failure")

// Mode is what a Conn does with the next call.
type Mode int

const (
	// Pass forwards calls unchanged.
	Pass Mode = iota
	// Fail returns ErrInjected without forwarding.
	Fail
	// Hang blocks until the call's context is done, like an unreachable
	// node.
	Hang
	// LoseReply forwards the call, so it takes effect on the node, then
	// returns ErrInjected as if the reply was lost on the way back.
	LoseReply
	// Duplicate forwards the call twice and returns the second reply, as a
	// Redis client does when it re-sends a command whose connection broke
	// after the command was sent.
	Duplicate
	// ApplyLate returns ErrInjected at once and forwards the call in the
	// background after the delay set with LateBy, detached from the call's
	// context: a request that the client gave up on but that still
	// reaches the node, after requests sent later. Wait waits for these.
	ApplyLate
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Hang:
		return "hang"
	case LoseReply:
		return "lose-reply"
	case Duplicate:
		return "duplicate"
	case ApplyLate:
		return "apply-late"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Conn is a driver.Conn with switchable faults. The zero fault settings
// forward every call. It is safe for concurrent use.
type Conn struct {
	next driver.Conn

	mu       sync.Mutex
	mode     Mode
	delay    time.Duration
	lateBy   time.Duration
	noScript bool
	hook     func(method string)
	choose   func(method string) Fault

	calls atomic.Int64
	late  sync.WaitGroup // calls of ApplyLate still to be forwarded
}

// Fault is what one call does, as chosen by the function given to Choose.
type Fault struct {
	Mode  Mode
	Delay time.Duration // before anything else, as with Conn.Delay
}

var _ driver.Conn = (*Conn)(nil)

// Wrap returns a Conn that forwards to next.
func Wrap(next driver.Conn) *Conn {
	return &Conn{next: next}
}

// Set changes what the following calls do.
func (c *Conn) Set(m Mode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mode = m
}

// Delay makes every call wait d (or until its context is done) before
// doing anything else.
func (c *Conn) Delay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay = d
}

// LateBy sets how long a call in ApplyLate mode waits before it is
// forwarded.
func (c *Conn) LateBy(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lateBy = d
}

// Choose makes every call ask f for its own fault, in place of the mode and
// delay set with Set and Delay, until it is called with nil. f may be
// called from several goroutines at once.
func (c *Conn) Choose(f func(method string) Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.choose = f
}

// Wait waits until every call made in ApplyLate mode has been forwarded.
func (c *Conn) Wait() { c.late.Wait() }

// ForgetScripts makes every EvalSha report ErrNoScript, as a node does right
// after SCRIPT FLUSH or a restart, until it is called with false.
func (c *Conn) ForgetScripts(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noScript = on
}

// OnCall sets a function called at the start of every call with the method
// name ("Eval", "EvalSha", "ScriptLoad").
func (c *Conn) OnCall(hook func(method string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = hook
}

// Calls returns how many calls reached the wrapper.
func (c *Conn) Calls() int64 { return c.calls.Load() }

// settings returns what applies to every call whatever its fault: the
// script amnesia of ForgetScripts and the hook of OnCall.
func (c *Conn) settings() (noScript bool, hook func(string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noScript, c.hook
}

// fault returns what the call of method does.
func (c *Conn) fault(method string) (f Fault, lateBy time.Duration) {
	c.mu.Lock()
	choose, f, lateBy := c.choose, Fault{Mode: c.mode, Delay: c.delay}, c.lateBy
	c.mu.Unlock()
	if choose != nil {
		f = choose(method)
	}
	return f, lateBy
}

// do runs one call with its fault. forward sends the call to the next Conn
// with the given context.
func (c *Conn) do(ctx context.Context, method string, forward func(ctx context.Context) (any, error)) (any, error) {
	c.calls.Add(1)
	if _, hook := c.settings(); hook != nil {
		hook(method)
	}
	// Read the settings after the hook, so a hook can set up this call's
	// fault.
	f, lateBy := c.fault(method)
	mode, delay := f.Mode, f.Delay
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	switch mode {
	case Fail:
		return nil, ErrInjected
	case Hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case LoseReply:
		forward(ctx)
		return nil, ErrInjected
	case Duplicate:
		forward(ctx)
	case ApplyLate:
		c.late.Add(1)
		detached := context.WithoutCancel(ctx)
		time.AfterFunc(lateBy, func() {
			defer c.late.Done()
			ctx, cancel := context.WithTimeout(detached, time.Minute)
			defer cancel()
			forward(ctx)
		})
		return nil, ErrInjected
	}
	return forward(ctx)
}

// Eval implements driver.Conn.
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.do(ctx, "Eval", func(ctx context.Context) (any, error) { return c.next.Eval(ctx, script, keys, args) })
}

// EvalSha implements driver.Conn.
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return c.do(ctx, "EvalSha", func(ctx context.Context) (any, error) {
		if noScript, _ := c.settings(); noScript {
			return nil, fmt.Errorf("faults: %w", driver.ErrNoScript)
		}
		return c.next.EvalSha(ctx, sha1, keys, args)
	})
}

// ScriptLoad implements driver.Conn.
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	reply, err := c.do(ctx, "ScriptLoad", func(ctx context.Context) (any, error) { return c.next.ScriptLoad(ctx, script) })
	digest, _ := reply.(string)
	return digest, err
}

// Scramble clears the faults of every Conn, then gives up to maxBad of
// them, picked at random, a random fault: a failure, a lost reply, a delay
// of up to 5ms, or (rarely, since it costs a whole per-node timeout) a hang.
func Scramble(rng *rand.Rand, conns []*Conn, maxBad int) {
	Reset(conns)
	for _, i := range rng.Perm(len(conns))[:rng.IntN(maxBad+1)] {
		switch p := rng.IntN(10); {
		case p < 4:
			conns[i].Set(Fail)
		case p < 7:
			conns[i].Set(LoseReply)
		case p < 9:
			conns[i].Delay(time.Duration(rng.IntN(5)+1) * time.Millisecond)
		default:
			conns[i].Set(Hang)
		}
	}
}

// Reset clears the faults of every Conn.
func Reset(conns []*Conn) {
	for _, c := range conns {
		c.Set(Pass)
		c.Delay(0)
	}
}
