package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locksmith-go/locksmith/fence"
	"github.com/locksmith-go/locksmith/redlock"
)

// A scheduler that runs only on the leader: two instances campaign, the
// first leads, and the second takes over as soon as the first resigns.
// Each job is sent with the term, which the job queue checks, so that a
// leader paused past its leadership cannot schedule over the next one.
func ExampleElection() {
	conns, stop := exampleNodes(3)
	defer stop()
	var queue fence.Memory // the job queue's side: the highest term it accepted

	ctx := context.Background()
	var closers []*redlock.Client
	defer func() {
		for _, locker := range closers {
			locker.Close(ctx)
		}
	}()
	instance := func() *redlock.Election { // one per process
		locker, err := redlock.New(conns)
		if err != nil {
			log.Fatal(err)
		}
		closers = append(closers, locker)
		e, err := locker.Election("scheduler", 10*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		return e
	}
	schedule := func(ctx context.Context, l *redlock.Leadership) error {
		fmt.Printf("%s schedules in term %d\n", l.Identity(), l.Term())
		return queue.Accept("jobs", l.Term())
	}

	a, b := instance(), instance()
	second := make(chan error)
	err := a.Do(ctx, "host-a", func(leading context.Context, l *redlock.Leadership) error {
		go func() { second <- b.Do(ctx, "host-b", schedule) }() // waits: host-a leads
		leader, err := b.Leader(leading)
		if err != nil {
			return err
		}
		fmt.Println("leader:", leader.Identity)
		return schedule(leading, l) // returning resigns
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := <-second; err != nil {
		log.Fatal(err)
	}
	_, err = a.Leader(ctx)
	fmt.Println(err)
	// Output:
	// leader: host-a
	// host-a schedules in term 1
	// host-b schedules in term 2
	// redlock: no leader of "scheduler"
}
