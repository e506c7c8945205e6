package faults

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// counter is a driver.Conn whose replies count the calls that reached it.
type counter struct{ n atomic.Int64 }

func (c *counter) Eval(context.Context, string, []string, []string) (any, error) {
	return c.n.Add(1), nil
}

func (c *counter) EvalSha(context.Context, string, []string, []string) (any, error) {
	return c.n.Add(1), nil
}

func (c *counter) ScriptLoad(context.Context, string) (string, error) {
	c.n.Add(1)
	return "digest", nil
}

func TestModes(t *testing.T) {
	tests := []struct {
		mode      Mode
		wantReply any
		wantErr   error
		wantSent  int64
	}{
		{Pass, int64(1), nil, 1},
		{Fail, nil, ErrInjected, 0},
		{LoseReply, nil, ErrInjected, 1},
		{Duplicate, int64(2), nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			next := &counter{}
			c := Wrap(next)
			c.Set(tt.mode)
			reply, err := c.Eval(context.Background(), "return 1", nil, nil)
			if reply != tt.wantReply || !errors.Is(err, tt.wantErr) {
				t.Errorf("Eval = %v, %v; want %v, %v", reply, err, tt.wantReply, tt.wantErr)
			}
			if got := next.n.Load(); got != tt.wantSent {
				t.Errorf("calls forwarded = %d, want %d", got, tt.wantSent)
			}
		})
	}
}

func TestApplyLateForwardsAfterTheCallReturned(t *testing.T) {
	next := &counter{}
	c := Wrap(next)
	c.Set(ApplyLate)
	c.LateBy(time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	reply, err := c.EvalSha(ctx, "digest", nil, nil)
	cancel() // the late call is detached from the caller's cancellation
	if reply != nil || !errors.Is(err, ErrInjected) {
		t.Errorf("EvalSha = %v, %v; want nil, %v", reply, err, ErrInjected)
	}
	c.Wait()
	if got := next.n.Load(); got != 1 {
		t.Errorf("calls forwarded after Wait = %d, want 1", got)
	}
}

func TestChooseDecidesEachCall(t *testing.T) {
	next := &counter{}
	c := Wrap(next)
	c.Set(Fail)
	var methods []string
	c.Choose(func(method string) Fault {
		methods = append(methods, method)
		return Fault{Mode: Pass}
	})
	if _, err := c.ScriptLoad(context.Background(), "return 1"); err != nil {
		t.Fatalf("ScriptLoad with Choose passing: %v", err)
	}
	c.Choose(nil)
	if _, err := c.ScriptLoad(context.Background(), "return 1"); !errors.Is(err, ErrInjected) {
		t.Errorf("ScriptLoad after Choose(nil) = %v, want the mode set before (%v)", err, ErrInjected)
	}
	if len(methods) != 1 || methods[0] != "ScriptLoad" {
		t.Errorf("Choose saw %q, want [ScriptLoad]", methods)
	}
}
