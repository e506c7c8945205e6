package security

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

// lockRoundTrip locks a fresh key through conns, checks it is held on the
// nodes (read over their plain ports), extends and releases it.
func lockRoundTrip(t *testing.T, conns []driver.Conn, nodes []*redisnode.Node) {
	t.Helper()
	ctx := t.Context()
	client := locktest.NewClient(t, conns)
	key := locktest.Key(t)
	lock, err := client.Lock(ctx, key, locktest.TTL)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if got := locktest.Holding(t, nodes, key, lock.Value()); got != len(nodes) {
		t.Errorf("%d of %d nodes hold the lock, want all", got, len(nodes))
	}
	if err := lock.Extend(ctx, locktest.TTL); err != nil {
		t.Errorf("Extend: %v", err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	locktest.RequireNoKey(t, nodes, key)
}

// refused checks that a client built with opts cannot lock on node: either
// the client cannot even be built, or TryLock fails. The error must contain
// want, unless it is a node timeout: go-redis retries a failed dial, so
// with a short node timeout the cause may never come back.
func refused(t *testing.T, a adapters.Adapter, addr string, want string, opts ...adapters.Option) {
	t.Helper()
	conn, err := a.Dial(t, addr, opts...)
	if err == nil {
		_, err = locktest.NewClient(t, []driver.Conn{conn}).TryLock(t.Context(), locktest.Key(t), locktest.TTL)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryLock = %v, want ErrNotAcquired", err)
		}
	}
	switch {
	case err == nil:
		t.Errorf("no error, want one mentioning %q", want)
	case strings.Contains(err.Error(), want):
	case errors.Is(err, redlock.ErrNodeTimeout):
		t.Logf("refused with a node timeout that hides the cause (%q expected): %v", want, err)
	default:
		t.Errorf("error = %v, want one mentioning %q", err, want)
	}
}

// TestTLS locks on three nodes over TLS, with certificates made by the test
// and clients trusting the test CA; a client that does not trust it is
// refused.
func TestTLS(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{TLS: true})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			conns := make([]driver.Conn, len(nodes))
			for i, n := range nodes {
				conns[i] = a.Conn(t, n.TLSAddr(), adapters.WithTLS(n.TLSConfig()))
			}
			lockRoundTrip(t, conns, nodes)

			untrusting := &tls.Config{MinVersion: tls.VersionTLS12}
			refused(t, a, nodes[0].TLSAddr(), "certificate", adapters.WithTLS(untrusting))
		})
	}
}

// TestRequirePass locks on nodes with requirepass, logging in as the
// default user; a wrong password is refused.
func TestRequirePass(t *testing.T) {
	const password = "correct horse battery staple"
	nodes := redisnode.Start(t, 3, redisnode.Config{Password: password})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			lockRoundTrip(t, locktest.Conns(t, a, nodes, adapters.WithAuth("", password)), nodes)
			refused(t, a, nodes[0].Addr(), "WRONGPASS", adapters.WithAuth("", "wrong"))
			refused(t, a, nodes[0].Addr(), "NOAUTH")
		})
	}
}

// minimalACL is the ACL rule set of a user that can do everything locksmith
// does, through any of the three adapters with their default options; it is
// the line integration/README.md documents. Each command is there for a
// reason:
//   - eval, evalsha, script|load: how scripts are sent (EVAL is also the
//     fallback after a NOSCRIPT reply);
//   - get, set, pexpire, del, exists: what the scripts call;
//   - client|tracking: rueidis turns on client-side caching when it
//     connects, unless ClientOption.DisableCache is set.
//
// HELLO and AUTH need no permission. rueidis also sends CLUSTER SLOTS (to
// tell a cluster from a single server) and PING (keep-alive); both may be
// refused, they only add entries to the ACL LOG.
var minimalACL = []string{
	"on", ">" + aclPassword, "~*", "resetchannels", "-@all",
	"+eval", "+evalsha", "+script|load",
	"+get", "+set", "+pexpire", "+del", "+exists",
	"+client|tracking",
}

const aclPassword = "locker-password"

// without returns minimalACL less one rule.
func without(rule string) []string {
	return slices.DeleteFunc(slices.Clone(minimalACL), func(r string) bool { return r == rule })
}

// deniedObjects returns the commands the ACL LOG of node records as denied
// to user.
func deniedObjects(t *testing.T, node *redisnode.Node, user string) []string {
	t.Helper()
	entries, ok := node.Do(t, "ACL", "LOG").([]any)
	if !ok {
		t.Fatalf("ACL LOG did not reply with an array")
	}
	var objects []string
	for _, e := range entries {
		fields, _ := e.([]any)
		m := map[string]any{}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].(string)
			m[k] = fields[i+1]
		}
		if m["username"] == user && m["reason"] == "command" {
			objects = append(objects, m["object"].(string))
		}
	}
	return objects
}

// libraryCommands are the commands locksmith itself sends or calls from its
// scripts.
var libraryCommands = []string{"eval", "evalsha", "script|load", "get", "set", "pexpire", "del", "exists"}

// TestACL logs in as ACL users: one with exactly minimalACL, which can do
// everything (multi-key locks and recovery from SCRIPT FLUSH included), and
// ones missing a rule, which fail or fall back as documented.
func TestACL(t *testing.T) {
	users := []redisnode.User{
		{Name: "locker", Rules: minimalACL},
		{Name: "no-evalsha", Rules: without("+evalsha")},
		{Name: "no-script-load", Rules: without("+script|load")},
		{Name: "no-eval", Rules: without("+eval")},
	}
	node := redisnode.Start(t, 1, redisnode.Config{Users: users})[0]
	nodes := []*redisnode.Node{node}
	conn := func(t *testing.T, a adapters.Adapter, user string) driver.Conn {
		t.Helper()
		return a.Conn(t, node.Addr(), adapters.WithAuth(user, aclPassword))
	}
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			t.Run("minimal", func(t *testing.T) {
				ctx := t.Context()
				node.Do(t, "ACL", "LOG", "RESET")
				conns := []driver.Conn{conn(t, a, "locker")}
				lockRoundTrip(t, conns, nodes)

				client := locktest.NewClient(t, conns)
				keys := []string{locktest.Key(t) + ":a", locktest.Key(t) + ":b"}
				lock, err := client.LockMulti(ctx, keys, locktest.TTL)
				if err != nil {
					t.Fatalf("LockMulti: %v", err)
				}
				node.Do(t, "SCRIPT", "FLUSH")
				if err := lock.Extend(ctx, locktest.TTL); err != nil {
					t.Errorf("Extend after SCRIPT FLUSH: %v", err)
				}
				if err := lock.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
				for _, k := range keys {
					locktest.RequireNoKey(t, nodes, k)
				}
				for _, obj := range deniedObjects(t, node, "locker") {
					if slices.Contains(libraryCommands, obj) {
						t.Errorf("the ACL LOG shows %q denied to the minimal user", obj)
					}
				}
			})

			t.Run("without_evalsha", func(t *testing.T) {
				// SCRIPT LOAD works, EVALSHA is refused: locking fails
				// loudly instead of silently sending the script each
				// time.
				refused(t, a, node.Addr(), "NOPERM", adapters.WithAuth("no-evalsha", aclPassword))
				locktest.RequireEmpty(t, nodes)
			})

			t.Run("without_script_load", func(t *testing.T) {
				// Scripts cannot be loaded, so they are sent with EVAL.
				node.Do(t, "ACL", "LOG", "RESET")
				lockRoundTrip(t, []driver.Conn{conn(t, a, "no-script-load")}, nodes)
				if denied := deniedObjects(t, node, "no-script-load"); !slices.Contains(denied, "script|load") {
					t.Errorf("the ACL LOG shows %q denied, want script|load among them (the fallback to EVAL)", denied)
				}
			})

			t.Run("without_eval", func(t *testing.T) {
				// Fine until the server forgets the scripts: recovering
				// from NOSCRIPT needs EVAL.
				ctx := t.Context()
				client := locktest.NewClient(t, []driver.Conn{conn(t, a, "no-eval")})
				lock, err := client.Lock(ctx, locktest.Key(t), locktest.TTL)
				if err != nil {
					t.Fatalf("Lock: %v", err)
				}
				if err := lock.Extend(ctx, locktest.TTL); err != nil {
					t.Fatalf("Extend: %v", err)
				}
				node.Do(t, "SCRIPT", "FLUSH")
				err = lock.Extend(ctx, locktest.TTL)
				if !errors.Is(err, redlock.ErrNotHeld) || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("Extend after SCRIPT FLUSH without +eval = %v, want ErrNotHeld with a NOPERM node error", err)
				}
				// Unlock loads the release script for the first time,
				// with SCRIPT LOAD, so it still works.
				if err := lock.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
				locktest.RequireEmpty(t, nodes)
			})
		})
	}
}
