// Command quickstart shows locksmith's Redlock client keeping a shared
// counter consistent across concurrent workers.
//
// With no configuration it starts five in-process Redis-compatible nodes.
// Set LOCKSMITH_NODES to use real Redis servers instead, as the locksmith
// command takes them: redis:// or rediss:// URLs, comma-separated (a bare
// host:port is taken too). Each must be an independent master.
//
// The workers share a budget of increments. Each worker repeatedly takes
// the lock and, while budget is left, reads the counter, pauses, and writes
// the counter plus one: a read-modify-write that loses updates unless the
// lock excludes the other workers. At the end the counter must equal the
// number of increments the workers performed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

func main() {
	workers := flag.Int("workers", 8, "concurrent workers")
	increments := flag.Int("increments", 200, "increments shared among the workers")
	flag.Parse()
	if err := run(*workers, *increments); err != nil {
		log.Fatal(err)
	}
}

func run(workers, increments int) error {
	if workers < 1 || increments < 1 {
		return errors.New("quickstart: -workers and -increments must be at least 1")
	}
	nodes, stop, err := nodes()
	if err != nil {
		return err
	}
	defer stop()

	conns := make([]driver.Conn, len(nodes))
	clients := make([]*redis.Client, len(nodes))
	for i, opts := range nodes {
		clients[i] = redis.NewClient(opts)
		defer clients[i].Close()
		conns[i] = goredis.New(clients[i])
	}
	locker, err := redlock.New(conns,
		redlock.WithRetryStrategy(redlock.ExponentialBackoff(time.Millisecond, 20*time.Millisecond, 10_000)))
	if err != nil {
		return err
	}

	// The shared counter lives on the first node, under its own key.
	ctx := context.Background()
	counter := clients[0]
	const counterKey = "quickstart:counter"
	if err := counter.Set(ctx, counterKey, 0, 0).Err(); err != nil {
		return fmt.Errorf("quickstart: resetting the counter: %w", err)
	}

	performed := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for done := false; !done; {
				err := locker.Do(ctx, "quickstart:lock", 5*time.Second, func(ctx context.Context) error {
					v, err := counter.Get(ctx, counterKey).Int()
					if err != nil || v >= increments {
						done = true
						return err
					}
					time.Sleep(time.Millisecond) // widen the window a missing lock would expose
					performed[w]++
					return counter.Set(ctx, counterKey, v+1, 0).Err()
				})
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	got, err := counter.Get(ctx, counterKey).Int()
	if err != nil {
		return fmt.Errorf("quickstart: reading the counter: %w", err)
	}
	total := 0
	fmt.Printf("nodes: %d, workers: %d, time: %v\n", len(nodes), workers, time.Since(start).Round(time.Millisecond))
	for w, n := range performed {
		fmt.Printf("worker %d: %d increments under the lock\n", w, n)
		total += n
	}
	fmt.Printf("counter = %d, increments performed = %d\n", got, total)
	if got != total {
		return fmt.Errorf("quickstart: counter %d != %d increments: updates were lost", got, total)
	}
	return nil
}

// nodes returns the options of the servers of LOCKSMITH_NODES, or starts
// five in-process ones.
func nodes() (opts []*redis.Options, stop func(), err error) {
	if env := os.Getenv("LOCKSMITH_NODES"); env != "" {
		opts, err := nodeOptions(env)
		return opts, func() {}, err
	}
	var servers []*miniredis.Miniredis
	stop = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for i := range 5 {
		s := miniredis.NewMiniRedis()
		if err := s.Start(); err != nil {
			stop()
			return nil, nil, fmt.Errorf("quickstart: starting in-process node %d: %w", i, err)
		}
		servers = append(servers, s)
		opts = append(opts, &redis.Options{Addr: s.Addr()})
	}
	return opts, stop, nil
}

// nodeOptions parses LOCKSMITH_NODES: redis:// or rediss:// URLs, as the
// locksmith command takes them, or bare host:port addresses,
// comma-separated.
func nodeOptions(env string) ([]*redis.Options, error) {
	var opts []*redis.Options
	for node := range strings.SplitSeq(env, ",") {
		node = strings.TrimSpace(node)
		switch {
		case node == "":
			continue
		case !strings.Contains(node, "://"):
			opts = append(opts, &redis.Options{Addr: node})
			continue
		}
		o, err := redis.ParseURL(node)
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		if err != nil {
			return nil, fmt.Errorf("quickstart: LOCKSMITH_NODES node %d: %w", len(opts), err)
		}
		opts = append(opts, o)
	}
	if len(opts) == 0 {
		return nil, errors.New("quickstart: LOCKSMITH_NODES lists no node")
	}
	return opts, nil
}
