package failures

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/redlock"
)

func quorumError(t *testing.T, err error) *redlock.QuorumError {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T) has no *redlock.QuorumError in its chain", err, err)
	}
	return qe
}

// failedNodes returns the indexes of the nodes a QuorumError lists as
// failed, checking that each is a *redlock.NodeError reachable with
// errors.As.
func failedNodes(t *testing.T, qe *redlock.QuorumError) []int {
	t.Helper()
	var out []int
	for _, ne := range qe.Errors {
		var found *redlock.NodeError
		if !errors.As(error(ne), &found) || found.Err == nil {
			t.Errorf("node error %v is not a *redlock.NodeError with a cause", ne)
		}
		out = append(out, ne.Node)
	}
	return out
}

// lockUseUnlock locks a fresh key through client and checks that the lock
// works end to end on the live nodes: held there, extendable, released.
func lockUseUnlock(t *testing.T, client *redlock.Client, live []*redisnode.Node) string {
	t.Helper()
	ctx := t.Context()
	key := locktest.Key(t)
	lock, err := client.Lock(ctx, key, locktest.TTL)
	if err != nil {
		t.Fatalf("Lock with a minority of nodes down: %v", err)
	}
	if got := locktest.Holding(t, live, key, lock.Value()); got != len(live) {
		t.Errorf("%d of the %d live nodes hold the lock, want all", got, len(live))
	}
	if err := lock.Extend(ctx, 2*locktest.TTL); err != nil {
		t.Errorf("Extend with a minority of nodes down: %v", err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Errorf("Unlock with a minority of nodes down: %v", err)
	}
	locktest.RequireNoKey(t, live, key)
	return key
}

// TestMinorityDown stops one node of three, then kills two of five: locks
// are still granted, extended and released, and the nodes that were down
// have no key once back.
func TestMinorityDown(t *testing.T) {
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			nodes := redisnode.Start(t, 5, redisnode.Config{})
			three := locktest.Client(t, a, nodes[:3])
			five := locktest.Client(t, a, nodes)

			t.Run("one_of_three_stopped", func(t *testing.T) {
				nodes[2].Stop(t)
				key := lockUseUnlock(t, three, nodes[:2])
				nodes[2].Restart(t)
				locktest.RequireNoKey(t, nodes[2:3], key)
			})
			t.Run("two_of_five_killed", func(t *testing.T) {
				nodes[0].Kill(t)
				nodes[4].Kill(t)
				key := lockUseUnlock(t, five, nodes[1:4])
				nodes[0].Restart(t)
				nodes[4].Restart(t)
				locktest.RequireNoKey(t, nodes, key)
			})
		})
	}
}

// TestMajorityDown takes down three nodes of five: Lock fails with
// ErrNotAcquired, naming each unreachable node in a *NodeError, and once
// the nodes are back no node has any key.
func TestMajorityDown(t *testing.T) {
	const retries = 2
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			nodes := redisnode.Start(t, 5, redisnode.Config{})
			client := locktest.Client(t, a, nodes, redlock.WithRetryStrategy(redlock.ConstantBackoff(10*time.Millisecond, 10*time.Millisecond, retries)))
			down := []int{1, 3, 4}
			nodes[1].Stop(t)
			nodes[3].Kill(t)
			nodes[4].Stop(t)

			_, err := client.Lock(t.Context(), locktest.Key(t), locktest.TTL)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("Lock with 3 of 5 nodes down = %v, want ErrNotAcquired", err)
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Lock = %v, which blames a context that did not end", err)
			}
			qe := quorumError(t, err)
			if got := failedNodes(t, qe); !slices.Equal(got, down) {
				t.Errorf("failed nodes %v, want %v: %v", got, down, qe)
			}
			// Each attempt ends once the down nodes' errors leave no
			// quorum, whether or not the live nodes have granted by then.
			if qe.Granted > 2 || qe.Attempts != retries+1 {
				t.Errorf("Granted %d, Attempts %d; want at most 2 and %d: %v", qe.Granted, qe.Attempts, retries+1, qe)
			}
			for _, i := range down {
				nodes[i].Restart(t)
			}
			locktest.RequireEmpty(t, nodes)
		})
	}
}

// TestNodeRestartKeepsLock kills a node holding a lock and starts it again:
// with appendfsync always it still has the key, and the lock can be
// extended and released on all nodes, the restarted one included.
func TestNodeRestartKeepsLock(t *testing.T) {
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			ctx := t.Context()
			nodes := redisnode.Start(t, 3, redisnode.Config{AppendOnly: true, AppendFsync: "always"})
			conns := locktest.Conns(t, a, nodes)
			client := locktest.NewClient(t, conns)
			key := locktest.Key(t)
			lock, err := client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			locktest.Settle(t) // node 0 may answer after the quorum

			nodes[0].Kill(t)
			nodes[0].Restart(t)
			if got := nodes[0].Do(t, "GET", key); got != lock.Value() {
				t.Fatalf("restarted node: GET %s = %v, want the lock's value %q (appendfsync always)", key, got, lock.Value())
			}

			// The clients' connections to the node died with it, and a
			// client may hold several (rueidis pipelines over several
			// and picks one at random per command): each fails once
			// before it is replaced. Once those are gone, the lock's
			// own calls must reach the restarted node.
			awaitFreshConnections(t, conns[0], key)
			const longer = 3 * locktest.TTL
			if err := lock.Extend(ctx, longer); err != nil {
				t.Fatalf("Extend after a node restart: %v", err)
			}
			for i, n := range nodes {
				if pttl := locktest.PTTL(t, n, key); pttl <= locktest.TTL {
					t.Errorf("node %d: PTTL after Extend(%v) = %v, want above %v", i, longer, pttl, locktest.TTL)
				}
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock after a node restart: %v", err)
			}
			locktest.RequireNoKey(t, nodes, key)
		})
	}
}

// awaitFreshConnections runs a harmless script through conn until it has
// succeeded many times in a row, so that every connection conn's client
// held to a restarted node has failed once and been replaced.
func awaitFreshConnections(t *testing.T, conn driver.Conn, key string) {
	t.Helper()
	const inARow, maxFailures = 64, 256
	for ok, failed := 0, 0; ok < inARow; {
		if _, err := conn.Eval(t.Context(), "return 1", []string{key}, nil); err != nil {
			ok = 0
			if failed++; failed > maxFailures {
				t.Fatalf("the restarted node still fails after %d calls: %v", failed, err)
			}
			continue
		}
		ok++
	}
}

// scriptStats reads how often a node answered NOSCRIPT and ran EVAL.
func scriptStats(t *testing.T, n *redisnode.Node) (noscript, evals int) {
	t.Helper()
	errs := redisnode.ParseInfo(n.Do(t, "INFO", "errorstats").(string))
	cmds := redisnode.ParseInfo(n.Do(t, "INFO", "commandstats").(string))
	return statField(errs["errorstat_NOSCRIPT"], "count"), statField(cmds["cmdstat_eval"], "calls")
}

// statField returns a numeric field of an INFO value such as
// "calls=3,usec=20", or 0 when it is absent.
func statField(value, field string) int {
	for kv := range strings.SplitSeq(value, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == field {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// TestScriptFlush empties the script cache of every node between calls:
// each call still succeeds, by way of a NOSCRIPT reply and EVAL, which the
// servers' statistics show.
func TestScriptFlush(t *testing.T) {
	nodes := redisnode.Start(t, 3, redisnode.Config{})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			ctx := t.Context()
			client := locktest.Client(t, a, nodes)
			key := locktest.Key(t)
			flushed := func(t *testing.T, call string, f func() error) {
				t.Helper()
				// A call returns once a quorum decided it: the
				// requests of the earlier calls must have ended
				// before the flush, and this call's before the
				// statistics are read.
				locktest.Settle(t)
				before := make([][2]int, len(nodes))
				for i, n := range nodes {
					n.Do(t, "SCRIPT", "FLUSH")
					before[i][0], before[i][1] = scriptStats(t, n)
				}
				if err := f(); err != nil {
					t.Fatalf("%s after SCRIPT FLUSH: %v", call, err)
				}
				locktest.Settle(t)
				for i, n := range nodes {
					noscript, evals := scriptStats(t, n)
					if noscript <= before[i][0] || evals <= before[i][1] {
						t.Errorf("%s, node %d: NOSCRIPT replies %d -> %d, EVAL calls %d -> %d; want both to grow (EVALSHA, then EVAL)",
							call, i, before[i][0], noscript, before[i][1], evals)
					}
				}
			}

			// Let the client load and remember every script first.
			lock, err := client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if err := lock.Extend(ctx, locktest.TTL); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}

			lock, err = client.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			flushed(t, "Extend", func() error { return lock.Extend(ctx, locktest.TTL) })
			flushed(t, "Unlock", func() error { return lock.Unlock(ctx) })
			locktest.RequireNoKey(t, nodes, key)
			var again *redlock.Lock
			flushed(t, "Lock", func() (err error) {
				again, err = client.Lock(ctx, key, locktest.TTL)
				return err
			})
			locktest.RequireHeldBy(t, nodes, key, again.Value())
			if err := again.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			locktest.RequireNoKey(t, nodes, key)
		})
	}
}

// TestPausedMinority freezes two nodes of five (SIGSTOP or docker pause):
// their requests time out with ErrNodeTimeout, and locks are still granted,
// extended and released by the other three.
func TestPausedMinority(t *testing.T) {
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			ctx := t.Context()
			nodes := redisnode.Start(t, 5, redisnode.Config{})
			holder := locktest.Client(t, a, nodes)
			rival := locktest.Client(t, a, nodes, redlock.WithRetryStrategy(redlock.NoRetry()))
			paused := []int{1, 3}
			live := []*redisnode.Node{nodes[0], nodes[2], nodes[4]}
			for _, i := range paused {
				nodes[i].Pause(t)
			}
			defer func() {
				for _, i := range paused {
					nodes[i].Resume(t)
				}
			}()

			key := locktest.Key(t)
			lock, err := holder.Lock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("Lock with 2 of 5 nodes paused: %v", err)
			}
			if got := locktest.Holding(t, live, key, lock.Value()); got != len(live) {
				t.Errorf("%d of the %d live nodes hold the lock, want all", got, len(live))
			}

			// The live nodes' refusals decide the round: it returns
			// without waiting for the paused nodes, which count as not
			// answered, or as timed out if they reached their timeout
			// first.
			_, err = rival.Lock(ctx, key, locktest.TTL)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("rival Lock = %v, want ErrNotAcquired", err)
			}
			qe := quorumError(t, err)
			for _, ne := range qe.Errors {
				if !slices.Contains(paused, ne.Node) || !errors.Is(ne, redlock.ErrNodeTimeout) {
					t.Errorf("node %d: %v, want only the paused nodes %v failing, with ErrNodeTimeout", ne.Node, ne.Err, paused)
				}
			}
			if qe.Refused != len(live) {
				t.Errorf("Refused %d, want %d (the live nodes): %v", qe.Refused, len(live), qe)
			}

			if err := lock.Extend(ctx, 2*locktest.TTL); err != nil {
				t.Errorf("Extend with 2 of 5 nodes paused: %v", err)
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Errorf("Unlock with 2 of 5 nodes paused: %v", err)
			}
			locktest.RequireNoKey(t, live, key)
		})
	}
}
