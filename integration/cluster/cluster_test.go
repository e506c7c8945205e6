package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// clusterGet reads key from the master that serves its slot, found by
// asking every master: the others answer with a MOVED redirection.
func clusterGet(t *testing.T, masters []*redisnode.Node, key string) any {
	t.Helper()
	locktest.Settle(t)
	var value any
	owners := 0
	for _, m := range masters {
		v, err := m.DoContext(t.Context(), "GET", key)
		var redisErr *resp.Error
		switch {
		case errors.As(err, &redisErr) && strings.HasPrefix(redisErr.Message, "MOVED "):
			continue
		case err != nil:
			t.Fatalf("%s: GET %s: %v", m.Addr(), key, err)
		}
		owners++
		value = v
	}
	if owners != 1 {
		t.Fatalf("%d masters serve the slot of %s, want 1", owners, key)
	}
	return value
}

// TestClusterConformance runs the driver conformance suite against a
// 3-master cluster through each cluster client.
func TestClusterConformance(t *testing.T) {
	masters := redisnode.StartCluster(t, 3, redisnode.Config{})
	for _, cc := range clusterClients {
		t.Run(cc.name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) driver.Conn { return cc.conn(t, addrs(masters)) })
		})
	}
}

// TestClusterAsNode uses a 3-master cluster as one Redlock node beside two
// plain servers: locks on keys in every part of the slot space are granted,
// stored on exactly one master, exclusive, extended and released, and the
// cluster's vote counts.
func TestClusterAsNode(t *testing.T) {
	masters := redisnode.StartCluster(t, 3, redisnode.Config{})
	plain := redisnode.Start(t, 2, redisnode.Config{})
	type setup struct {
		name    string
		cluster clusterClient
		plain   adapters.Adapter
	}
	var setups []setup
	for _, a := range adapters.All() {
		setups = append(setups, setup{a.Name, clusterClients[0], a})
	}
	rueidisAdapter := adapters.All()[2]
	setups = append(setups, setup{"rueidis_with_rueidis_cluster", clusterClients[1], rueidisAdapter})
	setups = append(setups, setup{"valkeygo_with_valkeygo_cluster", clusterClients[2], adapters.All()[3]})

	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			ctx := t.Context()
			newClient := func() *redlock.Client {
				conns := append([]driver.Conn{s.cluster.conn(t, addrs(masters))}, locktest.Conns(t, s.plain, plain)...)
				return locktest.NewClient(t, conns)
			}
			client, rival := newClient(), newClient()
			prefix := locktest.Key(t)

			locks := make([]*redlock.Lock, 12)
			for i := range locks {
				key := fmt.Sprintf("%s:%d", prefix, i)
				lock, err := client.Lock(ctx, key, locktest.TTL)
				if err != nil {
					t.Fatalf("Lock %s: %v", key, err)
				}
				locks[i] = lock
				if got := clusterGet(t, masters, key); got != lock.Value() {
					t.Errorf("%s in the cluster = %v, want the lock's value", key, got)
				}
				if got := locktest.Holding(t, plain, key, lock.Value()); got != len(plain) {
					t.Errorf("%s: %d of %d plain nodes hold the lock", key, got, len(plain))
				}
				_, err = rival.TryLock(ctx, key, locktest.TTL)
				if !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("rival TryLock of %s = %v, want ErrNotAcquired", key, err)
				}
				var qe *redlock.QuorumError
				if !errors.As(err, &qe) || qe.Refused < 2 || qe.Granted != 0 {
					t.Errorf("rival TryLock of %s: %v, want a quorum of the 3 nodes refusing", key, err)
				}
			}
			for i, lock := range locks {
				if err := lock.Extend(ctx, 2*locktest.TTL); err != nil {
					t.Errorf("Extend %d: %v", i, err)
				}
				if err := lock.Unlock(ctx); err != nil {
					t.Errorf("Unlock %d: %v", i, err)
				}
				if got := clusterGet(t, masters, lock.Key()); got != nil {
					t.Errorf("%s is still in the cluster after Unlock: %v", lock.Key(), got)
				}
				locktest.RequireNoKey(t, plain, lock.Key())
			}

			// With a plain node taken by another owner, the lock needs
			// the cluster's vote.
			key := prefix + ":needs-the-cluster"
			plain[1].Do(t, "SET", key, "another-owner", "PX", 60000)
			lock, err := client.TryLock(ctx, key, locktest.TTL)
			if err != nil {
				t.Fatalf("TryLock with one plain node taken: %v", err)
			}
			if got := clusterGet(t, masters, key); got != lock.Value() {
				t.Errorf("%s in the cluster = %v, want the lock's value", key, got)
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Errorf("Unlock: %v", err)
			}
			if got := clusterGet(t, masters, key); got != nil {
				t.Errorf("%s is still in the cluster after Unlock: %v", key, got)
			}
		})
	}
}

// TestClusterMultiKey locks several keys on a cluster node: keys in
// different hash slots fail with an error that names the fix, a common hash
// tag works.
func TestClusterMultiKey(t *testing.T) {
	masters := redisnode.StartCluster(t, 3, redisnode.Config{})
	for _, cc := range clusterClients {
		t.Run(cc.name, func(t *testing.T) {
			ctx := t.Context()
			client := locktest.NewClient(t, []driver.Conn{cc.conn(t, addrs(masters))})
			prefix := locktest.Key(t)

			// {a} and {b} hash to slots 15495 and 3300, on different masters.
			apart := []string{"{a}" + prefix, "{b}" + prefix}
			_, err := client.TryLockMulti(ctx, apart, locktest.TTL)
			if !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Fatalf("TryLockMulti over two hash slots = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), "hash tag") {
				t.Errorf("TryLockMulti over two hash slots = %q, want an error that names the fix (a common hash tag)", err)
			}
			for _, k := range apart {
				if got := clusterGet(t, masters, k); got != nil {
					t.Errorf("%s was created by a failed lock: %v", k, got)
				}
			}

			together := []string{"{" + prefix + "}:payment", "{" + prefix + "}:stock"}
			lock, err := client.TryLockMulti(ctx, together, locktest.TTL)
			if err != nil {
				t.Fatalf("TryLockMulti with a common hash tag: %v", err)
			}
			for _, k := range together {
				if got := clusterGet(t, masters, k); got != lock.Value() {
					t.Errorf("%s in the cluster = %v, want the lock's value", k, got)
				}
			}
			if err := lock.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			for _, k := range together {
				if got := clusterGet(t, masters, k); got != nil {
					t.Errorf("%s is still in the cluster after Unlock: %v", k, got)
				}
			}
		})
	}
}
