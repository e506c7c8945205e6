package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
)

// callFaults makes the calls to f from now on take the given modes in
// turn, and pass once they run out. calls reports how many f got since.
func callFaults(f *faults.Conn, modes ...faults.Mode) (calls func() int) {
	var n atomic.Int32
	f.Choose(func(string) faults.Fault {
		if i := int(n.Add(1)) - 1; i < len(modes) {
			return faults.Fault{Mode: modes[i]}
		}
		return faults.Fault{}
	})
	return func() int { return int(n.Load()) }
}

// loadScripts takes and releases a lock with client, so that the nodes of
// c have its scripts and each later request is one call.
func loadScripts(t *testing.T, c *cluster, client *redlock.Client) {
	t.Helper()
	if err := mustLock(t, client, "warm", time.Minute).Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.settle(t)
}

// A failed attempt's release that fails on a node that may hold the key,
// one that granted the attempt or whose reply was lost, is sent again: the
// key would otherwise refuse every lock for the rest of its TTL. On a node
// that refused the attempt, a failed release is not sent again.
func TestFailedAttemptReleasesAgainWhereItMayHoldTheKey(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := "plain"
		if fenced {
			name = "fenced"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 5)
			// Every round waits for every node, so that which nodes
			// refused is known when the attempt fails.
			opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()), redlock.WaitForEveryNode()}
			if fenced {
				opts = append(opts, redlock.WithFencing())
			}
			client := c.client(t, opts...)
			loadScripts(t, c, client)
			for _, s := range c.servers[3:] {
				s.Set("k", "other")
			}
			P, F, L := faults.Pass, faults.Fail, faults.LoseReply
			var calls [5]func() int
			var want [5]int
			if !fenced {
				// Node 0 grants and fails the release once, node 1
				// grants with its reply lost and fails it twice, node 2
				// grants, and node 3 refuses and fails the release.
				calls[0], want[0] = callFaults(c.faults[0], P, F), 3
				calls[1], want[1] = callFaults(c.faults[1], L, F, F), 4
				calls[2], want[2] = callFaults(c.faults[2], P), 2
				calls[3], want[3] = callFaults(c.faults[3], P, F), 2
				calls[4], want[4] = callFaults(c.faults[4]), 2
			} else {
				// Nodes 0 to 2 grant phase 1, nodes 0 and 1 fail phase
				// 2, so the attempt fails with only node 2 fenced. The
				// releases fail once on node 0, which failed phase 2, on
				// node 2, which passed it, and on node 3, which refused
				// both phases.
				calls[0], want[0] = callFaults(c.faults[0], P, F, F), 4
				calls[1], want[1] = callFaults(c.faults[1], P, F), 3
				calls[2], want[2] = callFaults(c.faults[2], P, P, F), 4
				calls[3], want[3] = callFaults(c.faults[3], P, P, F), 3
				calls[4], want[4] = callFaults(c.faults[4]), 3
			}
			_, err := client.TryLock(context.Background(), "k", time.Minute)
			var qe *redlock.QuorumError
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) {
				t.Fatalf("TryLock = %v, want a *QuorumError", err)
			}
			c.settle(t)
			for i, s := range c.servers {
				got, _ := s.Get("k")
				switch {
				case i < 3 && got != "":
					t.Errorf("node %d still holds the failed attempt's key (%d calls)", i, calls[i]())
				case i >= 3 && got != "other":
					t.Errorf("node %d: k = %q, want the other owner's", i, got)
				}
				if n := calls[i](); n != want[i] {
					t.Errorf("node %d got %d calls, want %d", i, n, want[i])
				}
			}
		})
	}
}

// A node that fails every request is sent a failed attempt's release at
// most four times.
func TestFailedAttemptReleasesAgainAFewTimesOnly(t *testing.T) {
	c := newCluster(t, 3)
	client := c.client(t, redlock.WithNodeTimeout(10*time.Second), redlock.WithRetryStrategy(redlock.NoRetry()), redlock.WithSkipUnhealthyNodes(false))
	loadScripts(t, c, client)
	c.servers[1].Set("k", "other")
	c.servers[2].Set("k", "other")
	calls := callFaults(c.faults[0], faults.LoseReply, faults.Fail, faults.Fail, faults.Fail, faults.Fail, faults.Fail)
	if _, err := client.TryLock(context.Background(), "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	c.settle(t)
	// The acquire, applied with its reply lost, then the release and the
	// three times it is sent again, all failing.
	if n := calls(); n != 1+4 {
		t.Errorf("node 0 got %d calls, want 5: the acquire and 4 releases", n)
	}
	if !c.servers[0].Exists("k") {
		t.Errorf("node 0 does not hold k, though every release failed")
	}
}

// A failed attempt returns only once the releases it sends again have
// ended: in the background they would outlive the round by their pauses,
// and the node would look behind and be left out of the next lock.
func TestReleaseSentAgainIsNoStraggler(t *testing.T) {
	c := newCluster(t, 3)
	// A node timeout of 50 ms makes a node behind once a request of it
	// outlives its round by 5 ms; the release's pauses take 7. Every
	// round waits for every node, so that node 0 has answered the attempt
	// when it fails, and its release is not one that the attempt leaves
	// to the background anyway.
	client := c.client(t, redlock.WithNodeTimeout(50*time.Millisecond), redlock.WithRetryStrategy(redlock.NoRetry()), redlock.WaitForEveryNode())
	loadScripts(t, c, client)
	c.servers[1].Set("k", "other")
	c.servers[2].Set("k", "other")
	F := faults.Fail
	callFaults(c.faults[0], faults.LoseReply, F, F, F)
	if _, err := client.TryLock(context.Background(), "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	if n := redlock.Stragglers(client, 0); n != 0 {
		t.Errorf("node 0 has %d requests running after the attempt returned, want 0", n)
	}
	if c.servers[0].Exists("k") {
		t.Errorf("node 0 still holds the failed attempt's key")
	}
	l := mustLock(t, client, "z", time.Minute)
	defer l.Unlock(context.Background())
	if !c.servers[0].Exists("z") {
		t.Errorf("node 0 does not hold z: the next lock left it out")
	}
}

// A node whose acquire reply is neither a grant nor a refusal, which a
// custom script may return, may hold the key: its failed release is sent
// again, as after an error.
func TestReleaseSentAgainAfterAnUnexpectedReply(t *testing.T) {
	c := newCluster(t, 3)
	// The wrapper sets the key as the default script does, but reports
	// the grant as a string.
	wrap := func(def string) string {
		return "local r = (function()\n" + def + "\nend)()\nif r == 1 then return 'granted' end\nreturn r"
	}
	client := c.client(t, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetryStrategy(redlock.NoRetry()),
		redlock.WithScripts(redlock.Scripts{Acquire: wrap}))
	// Node 0 loads and runs the acquire, then fails the release's script
	// load and the EVAL it falls back to.
	P, F := faults.Pass, faults.Fail
	callFaults(c.faults[0], P, P, F, F)
	if _, err := client.TryLock(context.Background(), "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	c.settle(t)
	for i, s := range c.servers {
		if s.Exists("k") {
			t.Errorf("node %d still holds the failed attempt's key", i)
		}
	}
}
