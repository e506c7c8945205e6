package redisnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/resp"
)

// Bounds on how long the harness waits for a server; they end a wait that
// would otherwise hang, they are not assertions about speed.
const (
	readyTimeout = 30 * time.Second
	opTimeout    = 30 * time.Second
	doTimeout    = 10 * time.Second
	pollInterval = 20 * time.Millisecond
)

type state int

const (
	running state = iota
	paused
	stopped
)

func (s state) String() string {
	switch s {
	case running:
		return "running"
	case paused:
		return "paused"
	default:
		return "stopped"
	}
}

// server is what a backend does for one node.
type server interface {
	// addr is the plain-text address clients use; it may change only
	// across a restart, and only where the backend's doc says so.
	addr() string
	// tlsAddr is the TLS address, "" without TLS.
	tlsAddr() string
	// meetAddr is the IP, port and cluster bus port other cluster nodes
	// reach this one at, as CLUSTER MEET takes them.
	meetAddr() (ip, port, busPort string)
	stop(ctx context.Context) error
	kill(ctx context.Context) error
	pause(ctx context.Context) error
	resume(ctx context.Context) error
	// start starts a stopped server again with the same port and data.
	start(ctx context.Context) error
	// logTail returns the last lines the server logged, for diagnostics.
	logTail(ctx context.Context) string
	// destroy stops the server for good and removes what it left behind.
	destroy(ctx context.Context) error
}

// Node is one Redis server started by [Start]. Its methods that take a
// testing.TB fail the test with t.Fatalf, so they must be called from the
// goroutine running the test; [Node.DoContext] returns errors instead and may
// be called from any goroutine.
type Node struct {
	backend Backend
	cfg     Config
	srv     server
	tlsConf *tls.Config // nil without TLS

	mu    sync.Mutex // guards state; lifecycle calls are serialized by it
	state state
}

// Backend reports which backend runs the node.
func (n *Node) Backend() Backend { return n.backend }

// Addr returns the "host:port" of the plain-text port. It stays the same
// across Stop, Kill and Restart (for cluster nodes in containers, see
// [StartCluster]).
func (n *Node) Addr() string { return n.srv.addr() }

// TLSAddr returns the "host:port" of the TLS port, or "" when the node was
// started without Config.TLS.
func (n *Node) TLSAddr() string { return n.srv.tlsAddr() }

// TLSConfig returns a client configuration that trusts the node's test CA,
// or nil when the node was started without Config.TLS. ServerName is left
// empty; Redis clients fill it from the address they dial, and the
// certificate covers localhost, 127.0.0.1, ::1 and, in a container, the
// container's IP. Each call returns a fresh copy.
func (n *Node) TLSConfig() *tls.Config {
	if n.tlsConf == nil {
		return nil
	}
	return n.tlsConf.Clone()
}

// Do runs one command on the node's plain port, authenticating with
// Config.Password when one is set, and fails the test on any error,
// including a Redis error reply. Arguments are formatted with fmt.Sprint.
// The reply is normalized as in package resp: int64, string, []any or nil.
func (n *Node) Do(t testing.TB, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	reply, err := n.DoContext(ctx, args...)
	if err != nil {
		t.Fatalf("redisnode: %s: %s: %v", n.Addr(), formatArgs(args), err)
	}
	return reply
}

// DoContext is [Node.Do] returning the error instead of failing the test;
// a Redis error reply is a *resp.Error. It opens a connection per call and
// is safe for concurrent use.
func (n *Node) DoContext(ctx context.Context, args ...any) (any, error) {
	conn, err := n.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Do(ctx, stringArgs(args)...)
}

func (n *Node) dial(ctx context.Context) (*resp.Wire, error) {
	conn, err := resp.DialWire(ctx, n.Addr(), nil)
	if err != nil {
		return nil, err
	}
	if n.cfg.Password != "" {
		if _, err := conn.Do(ctx, "AUTH", n.cfg.Password); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return conn, nil
}

// Stop shuts the node down gracefully with SIGTERM (docker stop), so Redis
// runs its shutdown path (final AOF fsync, RDB save when configured). A paused
// node is resumed first so the signal can be handled. Stopping a stopped node
// is a no-op.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	n.lifecycle(t, "stop", func(ctx context.Context) error { return n.stopLocked(ctx) })
}

// Kill ends the node with SIGKILL (docker kill): no shutdown path runs, so
// only what was already written to disk survives. Works on a paused node.
// Killing a stopped node is a no-op.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	n.lifecycle(t, "kill", func(ctx context.Context) error {
		if n.state == stopped {
			return nil
		}
		if err := n.srv.kill(ctx); err != nil {
			return err
		}
		n.state = stopped
		return nil
	})
}

// Pause freezes the node (SIGSTOP, docker pause): connections stay open and
// the kernel still accepts new ones, but nothing is answered until
// [Node.Resume]. The node must be running.
func (n *Node) Pause(t testing.TB) {
	t.Helper()
	n.lifecycle(t, "pause", func(ctx context.Context) error {
		if n.state != running {
			return fmt.Errorf("node is %s, not running", n.state)
		}
		if err := n.srv.pause(ctx); err != nil {
			return err
		}
		n.state = paused
		return nil
	})
}

// Resume continues a paused node (SIGCONT, docker unpause).
func (n *Node) Resume(t testing.TB) {
	t.Helper()
	n.lifecycle(t, "resume", func(ctx context.Context) error {
		if n.state != paused {
			return fmt.Errorf("node is %s, not paused", n.state)
		}
		if err := n.srv.resume(ctx); err != nil {
			return err
		}
		n.state = running
		return nil
	})
}

// Restart starts the node again on the same port with the same data
// directory, so whatever Redis persisted (AOF, RDB) is loaded back; a node
// that is still running or paused is stopped gracefully first. It returns
// once the node answers commands.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.lifecycle(t, "restart", func(ctx context.Context) error {
		if err := n.stopLocked(ctx); err != nil {
			return err
		}
		if err := n.srv.start(ctx); err != nil {
			return err
		}
		n.state = running
		return n.ready(ctx)
	})
}

func (n *Node) stopLocked(ctx context.Context) error {
	switch n.state {
	case stopped:
		return nil
	case paused:
		if err := n.srv.resume(ctx); err != nil {
			return fmt.Errorf("resume before stop: %w", err)
		}
		n.state = running
	}
	if err := n.srv.stop(ctx); err != nil {
		return err
	}
	n.state = stopped
	return nil
}

func (n *Node) lifecycle(t testing.TB, op string, f func(ctx context.Context) error) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		t.Fatalf("redisnode: %s %s (%s backend): %v%s", op, n.Addr(), n.backend, err, n.logSuffix(ctx))
	}
}

// ready waits until the node answers commands.
func (n *Node) ready(ctx context.Context) error {
	return waitReady(ctx, n.Addr(), n.cfg.Password)
}

// waitReady polls PING until the server answers. Any error reply other than
// LOADING counts as an answer: a server that refuses an unauthenticated PING
// (default user off, say) is up.
func waitReady(ctx context.Context, addr, password string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := pingOnce(ctx, addr, password)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not answering PING at %s within %s: %w", addr, readyTimeout, err)
		case <-time.After(pollInterval):
		}
	}
}

func pingOnce(ctx context.Context, addr, password string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := resp.DialWire(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	if password != "" {
		if _, err := conn.Do(ctx, "AUTH", password); err != nil {
			return answeredOrErr(err)
		}
	}
	_, err = conn.Do(ctx, "PING")
	return answeredOrErr(err)
}

func answeredOrErr(err error) error {
	var redisErr *resp.Error
	if errors.As(err, &redisErr) && !strings.HasPrefix(redisErr.Message, "LOADING") {
		return nil
	}
	return err
}

func (n *Node) logSuffix(ctx context.Context) string {
	tail := n.srv.logTail(ctx)
	if tail == "" {
		return ""
	}
	return "\nlast lines of the server log:\n" + tail
}

func stringArgs(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = v
		case []byte:
			out[i] = string(v)
		case int:
			out[i] = strconv.Itoa(v)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

func formatArgs(args []any) string {
	s := strings.Join(stringArgs(args), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
