package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/resp"
	"github.com/locksmith-go/locksmith/redlock"
)

// exampleNodes starts n in-process Redis-compatible servers. A program
// builds its Conns from its own clients instead, for example with
// goredis.New(redis.NewClient(...)) from the driver/goredis module.
func exampleNodes(n int) (conns []driver.Conn, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		s := miniredis.NewMiniRedis()
		if err := s.Start(); err != nil {
			log.Fatal(err)
		}
		servers = append(servers, s)
		conns = append(conns, resp.DialNotifier(s.Addr()))
	}
	return conns, func() {
		for i, s := range servers {
			conns[i].(*resp.Notifier).Close()
			s.Close()
		}
	}
}

func Example() {
	conns, stop := exampleNodes(5)
	defer stop()

	client, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)

	// Work on invoice 42, finishing before lock.ValidUntil().
	fmt.Println("holding", lock.Key(), "for at most", lock.TTL().Round(time.Second))
	// Output: holding invoice:42 for at most 10s
}

func ExampleClient_TryLock() {
	conns, stop := exampleNodes(3)
	defer stop()
	client, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	first, err := client.TryLock(ctx, "report", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Unlock(ctx)

	_, err = client.TryLock(ctx, "report", time.Minute)
	var qe *redlock.QuorumError
	if errors.Is(err, redlock.ErrNotAcquired) && errors.As(err, &qe) && qe.Refused >= qe.Quorum {
		fmt.Printf("busy: refused by a quorum of %d of %d nodes\n", qe.Quorum, qe.Nodes)
	}
	// Output: busy: refused by a quorum of 2 of 3 nodes
}

func ExampleLock_Extend() {
	conns, stop := exampleNodes(3)
	defer stop()
	client, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.Lock(ctx, "batch", 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)

	// The batch runs longer than planned: ask for more time before the
	// validity runs out.
	if err := lock.Extend(ctx, time.Minute); err != nil {
		log.Fatal("lost the lock: ", err)
	}
	fmt.Println("valid for about", lock.TTL().Round(time.Minute))
	// Output: valid for about 1m0s
}

func ExampleClient_Resume() {
	conns, stop := exampleNodes(3)
	defer stop()
	client, err := redlock.New(conns)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.Lock(ctx, "export", time.Minute)
	if err != nil {
		log.Fatal(err)
	}

	// Another process that was handed the key and value takes the lock
	// over and releases it when done.
	key, value := lock.Key(), lock.Value()
	taken, err := client.Resume(ctx, key, value, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(taken.Unlock(ctx))
	// Output: <nil>
}

func ExampleWithRetryStrategy() {
	conns, stop := exampleNodes(3)
	defer stop()
	client, err := redlock.New(conns,
		redlock.WithRetryStrategy(redlock.ExponentialBackoff(10*time.Millisecond, time.Second, 20)),
		redlock.WithNodeTimeout(50*time.Millisecond),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = client
	_, err = redlock.New(conns, redlock.WithRetryStrategy(redlock.ConstantBackoff(-time.Second, 0, 3)))
	fmt.Println(err)
	// Output: redlock: invalid argument: retry delay -1s is negative
}

// ownerAcquire is an acquire script that also records who holds the lock
// in a second key, in the lock key's hash slot, for as long as the TTL.
// KEYS[1] is the lock key and KEYS[2] the owner key; ARGV[1] the lock
// value, ARGV[2] the TTL in milliseconds and ARGV[3] the owner's name.
const ownerAcquire = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
  return 1
end
return 0
`

func ExampleWithScripts() {
	conns, stop := exampleNodes(3)
	defer stop()

	client, err := redlock.New(conns, redlock.WithScripts(redlock.Scripts{
		Acquire: func(string) string { return ownerAcquire },
		// "{invoice:42}" and "{invoice:42}:owner" share a hash slot.
		ExtraKeys: func(keys []string) []string { return []string{keys[0] + ":owner"} },
		ExtraArgs: []string{"billing-worker-7"},
	}))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.Lock(ctx, "{invoice:42}", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	fmt.Println("locked", lock.Key())
	// Output: locked {invoice:42}
}

func ExampleWithLogger() {
	conns, stop := exampleNodes(3)
	defer stop()

	// Debug shows every step; Warn and above only trouble.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case "time", "elapsed", "validity", "value", "held":
				return slog.Attr{} // vary from run to run
			case "granted", "refused", "errors":
				// Depend on which nodes answered before a quorum
				// decided the round.
				return slog.Attr{}
			}
			return a
		},
	}))
	client, err := redlock.New(conns, redlock.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	lock.Unlock(ctx)
	// Output:
	// level=DEBUG msg="redlock: attempt won the lock" key=invoice:42 quorum=2 attempt=1
	// level=DEBUG msg="redlock: lock acquired" key=invoice:42 attempts=1
	// level=DEBUG msg="redlock: lock released" key=invoice:42 quorum=2
}

func ExampleLockFromContext() {
	conns, stop := exampleNodes(3)
	defer stop()

	client, err := redlock.New(conns, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	err = client.Do(context.Background(), "ledger", 10*time.Second, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		// Check ctx.Err() right before each write, and send the token
		// with it: the store rejects a token lower than one it accepted.
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Println("writing to", lock.Key(), "with fencing token", lock.Token())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: writing to ledger with fencing token 1
}
