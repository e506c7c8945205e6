package fencing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/fencecheck"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// TestTokensGoBackAfterARestartWithoutPersistence is a negative control: it
// breaks the requirement that fenced locks run on nodes with appendonly yes
// and appendfsync always, and passes when the fencing checker reports the
// violation that follows. A restart delayed past the longest TTL is enough
// for lock keys, which expire anyway, but not for counters, which never do.
//
// Three nodes without persistence: five fenced grants while node 2 is down
// put counter 5 on nodes 0 and 1 only; node 0 is then restarted, empty, and
// node 1 is unreachable for a moment. The next grant is made by nodes 0 and
// 2, neither of which knows a counter, so its token starts over at 1.
func TestTokensGoBackAfterARestartWithoutPersistence(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	var conns []driver.Conn
	for _, n := range nodes {
		rc := resp.Dial(n.Addr())
		t.Cleanup(func() { rc.Close() })
		conns = append(conns, rc)
	}
	client := locktest.NewClient(t, conns, redlock.WithFencing(), redlock.WithNodeTimeout(250*time.Millisecond))
	key := locktest.Key(t)
	ctx := context.Background()
	var grants []fencecheck.Grant
	grant := func() uint64 {
		t.Helper()
		start := time.Now()
		// Lock, not TryLock: after the restart the first request
		// to node 0 finds the connection it used before closed.
		l, err := client.Lock(ctx, key, locktest.TTL)
		end := time.Now()
		if err != nil {
			t.Fatalf("grant %d: Lock: %v", len(grants)+1, err)
		}
		grants = append(grants, fencecheck.Grant{Start: start, End: end, Token: l.Token()})
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("grant %d: Unlock: %v", len(grants), err)
		}
		return l.Token()
	}

	nodes[2].Pause(t)
	for range 5 {
		grant()
	}
	// The grants returned without node 2. Its requests must have timed
	// out before it goes on: answered in time, they would bring its
	// counter up to 5 too (a late grant is followed by the lock's fence
	// and release), and the restart below would then lose nothing.
	locktest.Settle(t)
	nodes[2].Resume(t)
	if got := nodes[0].Do(t, "GET", "{"+key+"}:fencing-token"); got != "5" {
		t.Fatalf("node 0's counter after five grants = %#v, want \"5\"", got)
	}

	nodes[0].Kill(t)
	nodes[0].Restart(t) // without persistence: empty
	nodes[1].Pause(t)
	token := grant()
	nodes[1].Resume(t)

	if token > 5 {
		t.Fatalf("token after the restart = %d, want it back at or below 5: the control no longer provokes the violation", token)
	}
	violations := fencecheck.Check(grants)
	found := false
	for _, v := range violations {
		found = found || strings.HasPrefix(v, "P1:")
	}
	if !found {
		t.Errorf("token went back to %d, but the checker reports %q, want a P1 violation", token, violations)
	}
	t.Logf("negative control: token %d after 5; checker: %s", token, strings.Join(violations, "; "))
}
