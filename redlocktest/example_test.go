package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlocktest"
)

// In a test, New starts the nodes and stops them when the test ends.
func ExampleNew() {
	var t *testing.T // the test's own t
	nodes := redlocktest.New(t, 3)
	locker := nodes.Client(redlock.WithFencing())

	lock, err := locker.Lock(context.Background(), "invoice:42", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodes.Holders(lock); got != 3 {
		t.Errorf("%d nodes hold the lock, want 3", got)
	}
}

// Outside a test, Start and Close do the same.
func ExampleStart() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client()

	ctx := context.Background()
	lock, err := locker.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodes holding the lock:", nodes.Holders(lock))
	lock.Unlock(ctx)
	fmt.Println("after Unlock:", nodes.Holders(lock))
	// Output:
	// nodes holding the lock: 3
	// after Unlock: 0
}

// A function run by Do learns that its lock is lost from its context. Here
// the lock is lost while the first step runs, so the second never does.
func ExampleCluster_LoseLock() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client()

	err = locker.Do(context.Background(), "invoice:42", time.Second, func(ctx context.Context) error {
		for _, step := range []string{"charge line 1", "charge line 2"} {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			fmt.Println(step)
			lock, _ := redlock.LockFromContext(ctx)
			nodes.LoseLock(lock) // the keys vanish from 2 of the 3 nodes
			<-ctx.Done()         // the next renewal finds out
		}
		return nil
	})
	fmt.Println(errors.Is(err, redlock.ErrLockLost))
	// Output:
	// charge line 1
	// true
}

// With one node of three down, locks are still granted; with two, not.
func ExampleNode_Stop() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client()
	ctx := context.Background()

	nodes.Nodes()[0].Stop()
	lock, err := locker.TryLock(ctx, "report", time.Minute)
	fmt.Println("one node down:", err)
	lock.Unlock(ctx)

	nodes.Nodes()[1].Stop()
	_, err = locker.TryLock(ctx, "report", time.Minute)
	fmt.Println("two nodes down:", errors.Is(err, redlock.ErrNotAcquired), errors.Is(err, redlocktest.ErrStopped))

	nodes.Nodes()[0].Start()
	nodes.Nodes()[1].Start()
	lock, err = locker.TryLock(ctx, "report", time.Minute)
	fmt.Println("restarted:", err)
	lock.Unlock(ctx)
	// Output:
	// one node down: <nil>
	// two nodes down: true true
	// restarted: <nil>
}

// A hanging node never answers: the lock is granted by the others, and the
// hanging node counts as timed out.
func ExampleNode_Hang() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client(redlock.WithNodeTimeout(250 * time.Millisecond))
	ctx := context.Background()

	nodes.Nodes()[2].Hang()
	defer nodes.Nodes()[2].Resume()
	lock, err := locker.TryLock(ctx, "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	fmt.Println("nodes holding the lock:", nodes.Holders(lock))
	// Output: nodes holding the lock: 2
}

// A node restarted without persistence forgets its locks; when a majority
// does, a second owner gets a lock that the first still believes it holds.
// This is why Redis nodes need appendfsync always or delayed restarts.
func ExampleNode_Forget() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client()
	ctx := context.Background()

	first, err := locker.Lock(ctx, "ledger", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	nodes.Nodes()[0].Forget()
	nodes.Nodes()[1].Forget()
	second, err := locker.TryLock(ctx, "ledger", time.Minute)
	fmt.Println("second owner:", err)
	fmt.Println("first owner extends:", errors.Is(first.Extend(ctx, time.Minute), redlock.ErrNotHeld))
	second.Unlock(ctx)
	// Output:
	// second owner: <nil>
	// first owner extends: true
}

// Advance makes an hour-long TTL run out at once.
func ExampleCluster_Advance() {
	nodes, err := redlocktest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	locker := nodes.Client()
	ctx := context.Background()

	abandoned, err := locker.Lock(ctx, "nightly-job", time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	nodes.Advance(time.Hour)
	fmt.Println("nodes holding the abandoned lock:", nodes.Holders(abandoned))
	next, err := locker.TryLock(ctx, "nightly-job", time.Hour)
	fmt.Println("next run:", err)
	next.Unlock(ctx)
	// Output:
	// nodes holding the abandoned lock: 0
	// next run: <nil>
}
