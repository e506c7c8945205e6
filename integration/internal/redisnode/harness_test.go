package redisnode_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestStartGivesIndependentNodes(t *testing.T) {
	t.Parallel()
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	t.Logf("backend %s", nodes[0].Backend())

	seen := map[string]bool{}
	for i, n := range nodes {
		if seen[n.Addr()] {
			t.Fatalf("node %d has address %s, which another node has too", i, n.Addr())
		}
		seen[n.Addr()] = true
		if got := n.Do(t, "PING"); got != "PONG" {
			t.Errorf("%s: PING = %#v, want PONG", n.Addr(), got)
		}
		n.Do(t, "SET", "owner", i)
	}
	for i, n := range nodes {
		if got, want := n.Do(t, "GET", "owner"), fmt.Sprint(i); got != want {
			t.Errorf("%s: GET owner = %#v, want %q (nodes must not share data)", n.Addr(), got, want)
		}
		if got := n.Do(t, "INFO", "server"); !strings.Contains(got.(string), "redis_version:7.") {
			t.Errorf("%s: INFO server does not report Redis 7:\n%s", n.Addr(), got)
		}
	}
}

func TestKillRestartKeepsFsyncedKey(t *testing.T) {
	t.Parallel()
	n := redisnode.Start(t, 1, redisnode.Config{AppendOnly: true, AppendFsync: "always"})[0]
	addr := n.Addr()
	n.Do(t, "SET", "lock", "token-1")

	n.Kill(t)
	if _, err := n.DoContext(shortCtx(t), "PING"); err == nil {
		t.Fatalf("%s answered PING after Kill", addr)
	}
	n.Restart(t)

	if n.Addr() != addr {
		t.Errorf("address after restart = %s, want %s", n.Addr(), addr)
	}
	if got := n.Do(t, "GET", "lock"); got != "token-1" {
		t.Errorf("GET lock after kill -9 and restart = %#v, want %q (appendfsync always)", got, "token-1")
	}
}

// The negative control of the test above: without persistence a killed node
// comes back empty, which the chaos tests rely on to provoke violations.
func TestKillRestartWithoutPersistenceLosesKey(t *testing.T) {
	t.Parallel()
	n := redisnode.Start(t, 1, redisnode.Config{})[0]
	n.Do(t, "SET", "lock", "token-1")
	n.Kill(t)
	n.Restart(t)
	if got := n.Do(t, "GET", "lock"); got != nil {
		t.Errorf("GET lock after restart without persistence = %#v, want nil", got)
	}
}

func TestStopRestartKeepsKey(t *testing.T) {
	t.Parallel()
	// everysec: the graceful shutdown path writes the AOF out.
	n := redisnode.Start(t, 1, redisnode.Config{AppendOnly: true, AppendFsync: "everysec"})[0]
	n.Do(t, "SET", "lock", "token-2")
	n.Stop(t)
	if _, err := n.DoContext(shortCtx(t), "PING"); err == nil {
		t.Fatalf("%s answered PING after Stop", n.Addr())
	}
	n.Restart(t)
	if got := n.Do(t, "GET", "lock"); got != "token-2" {
		t.Errorf("GET lock after stop and restart = %#v, want %q", got, "token-2")
	}
	// Restarting a running node stops it first.
	n.Restart(t)
	if got := n.Do(t, "GET", "lock"); got != "token-2" {
		t.Errorf("GET lock after a second restart = %#v, want %q", got, "token-2")
	}
}

func TestPauseHoldsRepliesUntilResume(t *testing.T) {
	t.Parallel()
	nodes := redisnode.Start(t, 2, redisnode.Config{})
	paused, other := nodes[0], nodes[1]
	conn, err := resp.DialWire(shortCtx(t), paused.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	paused.Pause(t)
	replies := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := conn.Do(ctx, "SET", "k", "v")
		replies <- err
	}()
	// A paused server answers nothing; the window only bounds how long we
	// look, the test does not depend on its length.
	select {
	case err := <-replies:
		t.Fatalf("a paused node replied (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := other.Do(t, "PING"); got != "PONG" {
		t.Errorf("the other node: PING = %#v, want PONG", got)
	}

	paused.Resume(t)
	if err := <-replies; err != nil {
		t.Fatalf("the command sent while paused failed after Resume: %v", err)
	}
	if got := paused.Do(t, "GET", "k"); got != "v" {
		t.Errorf("GET k = %#v, want %q", got, "v")
	}
}

func TestStopAndKillWorkOnPausedNodes(t *testing.T) {
	t.Parallel()
	nodes := redisnode.Start(t, 2, redisnode.Config{})
	for _, n := range nodes {
		n.Pause(t)
	}
	nodes[0].Stop(t)
	nodes[1].Kill(t)
	for _, n := range nodes {
		n.Restart(t)
		if got := n.Do(t, "PING"); got != "PONG" {
			t.Errorf("%s: PING = %#v, want PONG", n.Addr(), got)
		}
	}
}

func TestConfigAuthACLAndPolicy(t *testing.T) {
	t.Parallel()
	n := redisnode.Start(t, 1, redisnode.Config{
		Password:   "default pass", // a space survives redis.conf quoting
		Users:      []redisnode.User{{Name: "locker", Rules: []string{"on", ">locker-secret", "~lock:*", "+@all"}}},
		Directives: [][]string{{"hz", "50"}, {"maxmemory-policy", "allkeys-lru"}},
	})[0]

	for param, want := range map[string]string{"maxmemory-policy": "allkeys-lru", "hz": "50", "save": "", "appendonly": "no"} {
		got := n.Do(t, "CONFIG", "GET", param)
		if fmt.Sprint(got) != fmt.Sprint([]any{param, want}) {
			t.Errorf("CONFIG GET %s = %#v, want [%s %s]", param, got, param, want)
		}
	}

	ctx := shortCtx(t)
	conn, err := resp.DialWire(ctx, n.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Do(ctx, "GET", "lock:a")
	var redisErr *resp.Error
	if !errors.As(err, &redisErr) || !strings.HasPrefix(redisErr.Message, "NOAUTH") {
		t.Errorf("unauthenticated GET: err = %v, want a NOAUTH error reply", err)
	}
	if _, err := conn.Do(ctx, "AUTH", "locker", "locker-secret"); err != nil {
		t.Fatalf("AUTH as the ACL user: %v", err)
	}
	if _, err := conn.Do(ctx, "SET", "lock:a", "v"); err != nil {
		t.Errorf("SET lock:a as locker: %v", err)
	}
	_, err = conn.Do(ctx, "SET", "other", "v")
	if !errors.As(err, &redisErr) || !strings.HasPrefix(redisErr.Message, "NOPERM") {
		t.Errorf("SET outside the user's key pattern: err = %v, want a NOPERM error reply", err)
	}
}

func TestClusterForms(t *testing.T) {
	t.Parallel()
	nodes := redisnode.StartCluster(t, 3, redisnode.Config{})
	for _, n := range nodes {
		info := redisnode.ParseInfo(n.Do(t, "CLUSTER", "INFO").(string))
		if info["cluster_state"] != "ok" || info["cluster_size"] != "3" {
			t.Errorf("%s: cluster_state %q, cluster_size %q, want ok and 3", n.Addr(), info["cluster_state"], info["cluster_size"])
		}
	}

	// The node owning a key accepts it; another node redirects to the
	// owner's announced address, which must be the address tests dial.
	slot := nodes[0].Do(t, "CLUSTER", "KEYSLOT", "lock:x").(int64)
	var owner *redisnode.Node
	var redirected bool
	for _, n := range nodes {
		_, err := n.DoContext(shortCtx(t), "SET", "lock:x", "v")
		var redisErr *resp.Error
		switch {
		case err == nil:
			owner = n
		case errors.As(err, &redisErr) && strings.HasPrefix(redisErr.Message, "MOVED "):
			redirected = true
			if want := fmt.Sprintf("MOVED %d ", slot); !strings.HasPrefix(redisErr.Message, want) {
				t.Errorf("%s: %q does not start with %q", n.Addr(), redisErr.Message, want)
			}
			defer func(msg string) {
				if owner != nil && !strings.HasSuffix(msg, " "+owner.Addr()) {
					t.Errorf("redirect %q does not name the owner's address %s", msg, owner.Addr())
				}
			}(redisErr.Message)
		default:
			t.Errorf("%s: SET lock:x: %v", n.Addr(), err)
		}
	}
	if owner == nil || !redirected {
		t.Fatalf("want one owner of slot %d and redirects from the others; owner found: %v, redirected: %v", slot, owner != nil, redirected)
	}
}

func TestTLSNodeAcceptsTLSClients(t *testing.T) {
	t.Parallel()
	nodes := redisnode.Start(t, 2, redisnode.Config{TLS: true, Password: "pw"})
	for _, n := range nodes {
		if n.TLSAddr() == "" || n.TLSConfig() == nil {
			t.Fatalf("%s: no TLS address or config", n.Addr())
		}
		checkTLSPing(t, n.TLSAddr(), n)
	}
	// Restarting keeps the certificate.
	nodes[0].Restart(t)
	checkTLSPing(t, nodes[0].TLSAddr(), nodes[0])

	// The plain port still answers.
	if got := nodes[1].Do(t, "PING"); got != "PONG" {
		t.Errorf("plain PING = %#v, want PONG", got)
	}
	// Without the test CA the certificate is not trusted.
	ctx := shortCtx(t)
	if conn, err := resp.DialWire(ctx, nodes[1].TLSAddr(), nil); err == nil {
		// A plain-text client against the TLS port gets no RESP reply.
		if _, err := conn.Do(ctx, "PING"); err == nil {
			t.Errorf("plain-text PING on the TLS port got a reply")
		}
		conn.Close()
	}
}

func checkTLSPing(t *testing.T, addr string, n *redisnode.Node) {
	t.Helper()
	ctx := shortCtx(t)
	conn, err := resp.DialWire(ctx, addr, n.TLSConfig())
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer conn.Close()
	if _, err := conn.Do(ctx, "AUTH", "pw"); err != nil {
		t.Fatalf("AUTH over TLS: %v", err)
	}
	if got, err := conn.Do(ctx, "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS = %#v, %v; want PONG", got, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	t.Logf("TLS PING via %s (%s) ok", addr, host)
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}
