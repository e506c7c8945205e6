package redlock_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/faults"
	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

// An Observer sets callbacks for the events it wants, here to print the
// steps of a lock's life.
func ExampleWithObserver() {
	conns, stop := exampleNodes(3)
	defer stop()

	events := observe.Observer{
		AttemptDone: func(_ context.Context, info observe.RoundInfo) {
			fmt.Println("attempt", info.Attempt, "won:", info.OK)
		},
		Acquired: func(_ context.Context, info observe.AcquiredInfo) {
			fmt.Println("acquired", info.Keys, "after", info.Attempts, "attempt(s)")
		},
		Released: func(_ context.Context, info observe.RoundInfo) {
			fmt.Println("released", info.Keys, "confirmed:", info.OK)
		},
	}
	locker, err := redlock.New(conns, redlock.WithObserver(events))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	lock.Unlock(ctx)
	// Output:
	// attempt 1 won: true
	// acquired [invoice:42] after 1 attempt(s)
	// released [invoice:42] confirmed: true
}

// dropVarying removes the attributes that vary from run to run, for a
// stable Output; a program keeps them.
func dropVarying(_ []string, a slog.Attr) slog.Attr {
	switch a.Key {
	case slog.TimeKey, "value", "elapsed", "validity":
		return slog.Attr{}
	}
	return a
}

// At level Warn the log shows only trouble, here a node that fails.
func ExampleWithLogger_warn() {
	conns, stop := exampleNodes(1)
	defer stop()
	failing := faults.Wrap(conns[0])
	failing.Set(faults.Fail)
	conns = []driver.Conn{failing}
	ctx := context.Background()

	opts := &slog.HandlerOptions{Level: slog.LevelWarn}

	opts.ReplaceAttr = dropVarying // only for this example's stable Output

	logger := slog.New(slog.NewJSONHandler(os.Stdout, opts))
	locker, err := redlock.New(conns, redlock.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	// A node failing during a Lock call logs, among other records:
	// {"time":"...","level":"WARN","msg":"redlock: node error","op":"lock","key":"invoice:42","node":0,"error":"..."}
	lock, err := locker.TryLock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		fmt.Println("not acquired")
		return
	}
	lock.Unlock(ctx)
	// Output:
	// {"level":"WARN","msg":"redlock: node error","op":"lock","key":"invoice:42","node":0,"error":"faults: injected node failure"}
	// {"level":"WARN","msg":"redlock: attempt failed","key":"invoice:42","granted":0,"refused":0,"errors":1,"quorum":1,"attempt":1}
	// {"level":"WARN","msg":"redlock: lock not acquired","key":"invoice:42","reason":"node_errors","attempts":1,"error":"redlock: lock not acquired on \"invoice:42\": 0 of 1 nodes granted, quorum is 1; node 0: faults: injected node failure"}
	// not acquired
}
