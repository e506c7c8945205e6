package redigo

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

// sendLog records which of redigo's calls sent each command.
type sendLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *sendLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *sendLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := l.calls
	l.calls = nil
	return calls
}

// loggedConn is a connection whose DoContext calls are recorded, and that
// is no redis.ConnWithTimeout, as a Dial that wraps its connections may
// return; loggedTimeoutConn is one, and records its DoWithTimeout calls.
type loggedConn struct {
	redis.Conn
	log *sendLog
}

func (c loggedConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	c.log.add("DoContext")
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

func (c loggedConn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

type loggedTimeoutConn struct{ loggedConn }

func (c loggedTimeoutConn) DoWithTimeout(timeout time.Duration, cmd string, args ...any) (any, error) {
	c.log.add("DoWithTimeout")
	return redis.DoWithTimeout(c.Conn, timeout, cmd, args...)
}

func (c loggedTimeoutConn) ReceiveWithTimeout(timeout time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, timeout)
}

// A small command with a ctx that only its deadline ends, as locksmith's
// rounds give, is sent with DoWithTimeout, which needs no goroutine of
// redigo's; a large one, one whose ctx can be cancelled, and one on a
// connection that is no redis.ConnWithTimeout go through DoContext.
func TestSendChoosesTheCall(t *testing.T) {
	server := miniredis.RunT(t)
	deadlineOnly, cancel := adapter.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cancellable, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	small := []string{"v"}
	large := []string{strings.Repeat("v", smallCommand+1)}
	for _, tc := range []struct {
		name        string
		withTimeout bool
		ctx         context.Context
		args        []string
		want        string
	}{
		{"small, deadline only", true, deadlineOnly, small, "DoWithTimeout"},
		{"large, deadline only", true, deadlineOnly, large, "DoContext"},
		{"small, cancellable", true, cancellable, small, "DoContext"},
		{"small, no ConnWithTimeout", false, deadlineOnly, small, "DoContext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &sendLog{}
			pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
				conn, err := redis.DialContext(ctx, "tcp", server.Addr())
				if err != nil {
					return nil, err
				}
				if tc.withTimeout {
					return loggedTimeoutConn{loggedConn{conn, log}}, nil
				}
				return loggedConn{conn, log}, nil
			}}
			defer pool.Close()
			c := New(pool)
			c.serverID.Store(new(string)) // no INFO server on the first reply
			got, err := c.Eval(tc.ctx, "return ARGV[1]", nil, tc.args)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tc.args[0] {
				t.Errorf("Eval = %.20q, want %.20q", got, tc.args[0])
			}
			if calls := log.take(); len(calls) != 1 || calls[0] != tc.want {
				t.Errorf("sent with %v, want [%s]", calls, tc.want)
			}
			if err := c.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestErrNoTimeout(t *testing.T) {
	if errNoTimeout == nil || errors.Is(errNoTimeout, context.DeadlineExceeded) {
		t.Fatalf("errNoTimeout = %v, want redigo's error for a connection without timeouts", errNoTimeout)
	}
}
