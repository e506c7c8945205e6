package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlocktest"
)

// nodeErrors returns the per-node errors of err, a *redlock.QuorumError.
func nodeErrors(t *testing.T, err error) []*redlock.NodeError {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v is not a *redlock.QuorumError", err)
	}
	return qe.Errors
}

func TestStopAndStart(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client()
	ctx := context.Background()
	lock := mustLock(t, client, "invoice:42", time.Minute)

	// One node down: locks are still granted by the other two.
	n0, n1 := nodes.Nodes()[0], nodes.Nodes()[1]
	n0.Stop()
	other, err := client.TryLock(ctx, "invoice:43", time.Minute)
	if err != nil {
		t.Fatalf("TryLock with one node of 3 stopped: %v", err)
	}
	other.Unlock(ctx)

	// Two down: no quorum, and the nodes say why.
	n1.Stop()
	_, err = client.TryLock(ctx, "invoice:44", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlocktest.ErrStopped) {
		t.Fatalf("TryLock with two nodes of 3 stopped: %v, want ErrNotAcquired with ErrStopped", err)
	}
	if errs := nodeErrors(t, err); len(errs) != 2 || errs[0].Node != 0 || errs[1].Node != 1 {
		t.Errorf("node errors = %v, want nodes 0 and 1", errs)
	}

	// Restarted, the nodes still hold the lock, and the client, whose
	// scripts they have forgotten, releases it.
	n0.Start()
	n1.Start()
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("Holders after restart = %d, want 3", got)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after restart: %v", err)
	}
	if got := nodes.Holders(lock); got != 0 {
		t.Errorf("Holders after Unlock = %d, want 0", got)
	}
}

func TestForget(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client()
	ctx := context.Background()
	lock := mustLock(t, client, "invoice:42", time.Minute)

	// A majority restarted without persistence forgets the lock: the
	// unsafe restart that the operational requirements rule out.
	nodes.Nodes()[0].Forget()
	nodes.Nodes()[1].Stop()
	nodes.Nodes()[1].Forget() // a stopped node comes back empty too
	if got := nodes.Holders(lock); got != 1 {
		t.Errorf("Holders after two nodes forgot = %d, want 1", got)
	}
	for i, n := range nodes.Nodes()[:2] {
		if keys := n.Keys(); len(keys) != 0 {
			t.Errorf("node %d keys after Forget = %q, want none", i, keys)
		}
	}
	second, err := client.TryLock(ctx, "invoice:42", time.Minute)
	if err != nil {
		t.Fatalf("TryLock after a majority forgot: %v", err)
	}
	defer second.Unlock(ctx)
	if err := lock.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend of the forgotten lock: %v, want ErrNotHeld", err)
	}
}

func TestHangAndResume(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client(redlock.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()
	n0, n1 := nodes.Nodes()[0], nodes.Nodes()[1]

	n0.Hang()
	n1.Hang()
	_, err := client.TryLock(ctx, "invoice:42", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNodeTimeout) {
		t.Fatalf("TryLock with two hanging nodes: %v, want ErrNotAcquired with ErrNodeTimeout", err)
	}
	if errs := nodeErrors(t, err); len(errs) != 2 || errs[0].Node != 0 || errs[1].Node != 1 {
		t.Errorf("node errors = %v, want nodes 0 and 1", errs)
	}

	// A request held by a hanging node is answered once it resumes.
	reply := make(chan any, 1)
	go func() {
		r, err := n0.Conn().Eval(context.Background(), "return 'answered'", nil, nil)
		if err != nil {
			r = err
		}
		reply <- r
	}()
	n0.Resume()
	if got := <-reply; got != "answered" {
		t.Errorf("held request got %v, want its reply", got)
	}

	n1.Resume()
	lock, err := client.TryLock(ctx, "invoice:42", time.Minute)
	if err != nil {
		t.Fatalf("TryLock after Resume: %v", err)
	}
	lock.Unlock(ctx)
}

// A hanging node holds a request until the request's context ends, and
// reports that context's error.
func TestHangHonoursContext(t *testing.T) {
	nodes := redlocktest.New(t, 1)
	nodes.Nodes()[0].Hang()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := nodes.Conns()[0].Eval(ctx, "return 1", nil, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Eval on a hanging node: %v, want context.Canceled", err)
	}
}

func TestSlow(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	client := nodes.Client(redlock.WithNodeTimeout(nodeTimeout))
	ctx := context.Background()

	// A node slower than the per-node timeout counts as failed; the other
	// two still grant the lock.
	nodes.Nodes()[2].Slow(time.Hour)
	lock, err := client.TryLock(ctx, "invoice:42", time.Minute)
	if err != nil {
		t.Fatalf("TryLock with one slow node: %v", err)
	}
	if got := nodes.Holders(lock); got != 2 {
		t.Errorf("Holders with one node slower than the timeout = %d, want 2", got)
	}
	lock.Unlock(ctx)

	// A delay within the timeout costs time, not votes.
	nodes.Nodes()[2].Slow(time.Millisecond)
	lock, err = client.TryLock(ctx, "invoice:42", time.Minute)
	if err != nil {
		t.Fatalf("TryLock with a short delay: %v", err)
	}
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("Holders with a short delay = %d, want 3", got)
	}
	lock.Unlock(ctx)
}

func TestLoseLockInKeepAlive(t *testing.T) {
	nodes := redlocktest.New(t, 5)
	client := nodes.Client()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	lock := mustLock(t, client, "export", time.Second)
	work, stop := lock.KeepAlive(ctx)
	defer stop()
	nodes.LoseLock(lock)
	if got := nodes.Holders(lock); got != 2 {
		t.Errorf("Holders after LoseLock on 5 nodes = %d, want 2", got)
	}
	<-work.Done()
	if err := context.Cause(work); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("KeepAlive context cause: %v, want ErrLockLost", err)
	}
}

// Bad arguments fail the test that made the Cluster, and change nothing.
func TestBadArgumentsFailTheTest(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*redlocktest.Cluster)
		want string
	}{
		{"negative Slow", func(c *redlocktest.Cluster) { c.Nodes()[0].Slow(-time.Second) }, "the delay is negative"},
		{"negative Advance", func(c *redlocktest.Cluster) { c.Advance(-time.Second) }, "time cannot go back"},
		{"LoseLock(nil)", func(c *redlocktest.Cluster) { c.LoseLock(nil) }, "LoseLock(nil)"},
		{"Holders(nil)", func(c *redlocktest.Cluster) { c.Holders(nil) }, "Holders(nil)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			tc.call(redlocktest.New(rec, 1))
			if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], tc.want) {
				t.Errorf("reported %q, want one error containing %q", rec.errors, tc.want)
			}
		})
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		opts []redlocktest.Option
		want string
	}{
		{"no nodes", 0, nil, "0 nodes: need at least 1"},
		{"negative nodes", -3, nil, "-3 nodes: need at least 1"},
		{"nil option", 1, []redlocktest.Option{nil}, "nil Option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redlocktest.Start(tc.n, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v, want an error containing %q", err, tc.want)
			}
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				redlocktest.New(rec, tc.n, tc.opts...)
			}()
			<-done
			if len(rec.fatals) != 1 || !strings.Contains(rec.fatals[0], tc.want) {
				t.Errorf("New reported %q, want one fatal error containing %q", rec.fatals, tc.want)
			}
		})
	}
}

func TestClientRejectsBadOptions(t *testing.T) {
	rec := &recorder{TB: t}
	nodes := redlocktest.New(rec, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nodes.Client(redlock.WithDriftFactor(2))
	}()
	<-done
	if len(rec.fatals) != 1 || !strings.Contains(rec.fatals[0], "invalid argument") {
		t.Errorf("Client reported %q, want one fatal error about an invalid argument", rec.fatals)
	}
}

// A Cluster made by Start reports bad arguments from Close.
func TestStartReportsFromClose(t *testing.T) {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	nodes.Nodes()[0].Slow(-time.Second)
	if client := nodes.Client(redlock.WithDriftFactor(2)); client != nil {
		t.Error("Client with a bad option returned a client")
	}
	err = nodes.Close()
	if err == nil || !strings.Contains(err.Error(), "the delay is negative") || !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Close: %v, want the negative delay and the invalid option", err)
	}
	if err := nodes.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

// The end of the test lets go a request held by a hanging node, which then
// fails, so no goroutine waits for ever.
func TestCleanupEndsHeldRequests(t *testing.T) {
	done := make(chan error, 1)
	t.Run("hanging", func(t *testing.T) {
		nodes := redlocktest.New(t, 1)
		nodes.Nodes()[0].Hang()
		go func() {
			_, err := nodes.Conns()[0].Eval(context.Background(), "return 1", nil, nil)
			done <- err
		}()
	})
	if err := <-done; !errors.Is(err, redlocktest.ErrStopped) {
		t.Errorf("held request after cleanup: %v, want ErrStopped", err)
	}
}

// recorder is a testing.TB that records failures instead of reporting
// them. Its Fatal methods end the calling goroutine, as testing's do.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}

func (r *recorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatal(args ...any) {
	r.fatals = append(r.fatals, fmt.Sprint(args...))
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// A nil or zero Cluster or Node does not panic.
func TestNilAndZeroValues(t *testing.T) {
	var nilCluster *redlocktest.Cluster
	if err := nilCluster.Close(); err == nil {
		t.Error("Close of a nil Cluster: nil error")
	}
	if nilCluster.Client() != nil || nilCluster.Conns() != nil || nilCluster.Nodes() != nil || nilCluster.Holders(nil) != 0 {
		t.Error("a nil Cluster returned something")
	}
	nilCluster.Advance(time.Second)
	nilCluster.LoseLock(nil)

	var zero redlocktest.Cluster
	zero.LoseLock(new(redlock.Lock))
	if err := zero.Close(); err == nil || !strings.Contains(err.Error(), "without nodes") {
		t.Errorf("Close of a zero Cluster after LoseLock: %v, want the LoseLock error", err)
	}

	for _, n := range []*redlocktest.Node{nil, new(redlocktest.Node)} {
		n.Stop()
		n.Start()
		n.Forget()
		n.Hang()
		n.Resume()
		n.Slow(time.Second)
		n.Advance(time.Second)
		if n.Conn() != nil || n.Addr() != "" || n.Keys() != nil {
			t.Errorf("%#v returned something", n)
		}
		if _, ok := n.Get("k"); ok {
			t.Errorf("%#v holds a key", n)
		}
	}
}

// A restarted node has forgotten its scripts, as a restarted Redis server
// has, so clients go through their NOSCRIPT recovery.
func TestRestartForgetsScripts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart func(*redlocktest.Node)
	}{
		{"Stop and Start", func(n *redlocktest.Node) { n.Stop(); n.Start() }},
		{"Forget", (*redlocktest.Node).Forget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := redlocktest.New(t, 1).Nodes()[0]
			ctx := context.Background()
			sha, err := node.Conn().ScriptLoad(ctx, "return 7")
			if err != nil {
				t.Fatalf("ScriptLoad: %v", err)
			}
			if got, err := node.Conn().EvalSha(ctx, sha, nil, nil); err != nil || got != int64(7) {
				t.Fatalf("EvalSha before the restart = %v, %v; want 7", got, err)
			}
			tc.restart(node)
			if _, err := node.Conn().EvalSha(ctx, sha, nil, nil); !errors.Is(err, driver.ErrNoScript) {
				t.Errorf("EvalSha after the restart: %v, want ErrNoScript", err)
			}
		})
	}
}
