package observe_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// Each round's RoundInfo lists the nodes that failed in it. Here two of
// three in-process nodes fail, so the attempt cannot reach a quorum and
// the call ends without the lock.
func ExampleObserver() {
	var conns []driver.Conn
	for i := range 3 {
		s := miniredis.NewMiniRedis()
		if err := s.Start(); err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		conn := resp.Dial(s.Addr())
		defer conn.Close()
		node := faults.Wrap(conn)
		if i > 0 {
			node.Set(faults.Fail) // only for this example: nodes 1 and 2 fail
		}
		conns = append(conns, node)
	}

	events := observe.Observer{
		AttemptDone: func(_ context.Context, info observe.RoundInfo) {
			fmt.Printf("%s attempt %d: quorum reached: %t\n", info.Op, info.Attempt, info.OK)
			for _, err := range info.Errors {
				var ne *redlock.NodeError
				if errors.As(err, &ne) {
					fmt.Printf("  node %d failed: %v\n", ne.Node, ne.Err)
				}
			}
		},
		NotAcquired: func(_ context.Context, info observe.NotAcquiredInfo) {
			fmt.Println("not acquired:", info.Reason)
		},
	}
	locker, err := redlock.New(conns, redlock.WithObserver(events))
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close(context.Background())
	if _, err := locker.TryLock(context.Background(), "invoice:42", 10*time.Second); err == nil {
		log.Fatal("acquired with two of three nodes failing")
	}
	// Output:
	// lock attempt 1: quorum reached: false
	//   node 1 failed: faults: injected node failure
	//   node 2 failed: faults: injected node failure
	// not acquired: node_errors
}
