package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
)

// SeedFromEnv returns the seed in LOCKSMITH_FENCING_SEED, so that a failed
// run can be repeated, or one taken from the clock.
func SeedFromEnv() (uint64, error) {
	s := os.Getenv("LOCKSMITH_FENCING_SEED")
	if s == "" {
		return uint64(time.Now().UnixNano()), nil
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("LOCKSMITH_FENCING_SEED=%q: %w", s, err)
	}
	return seed, nil
}

// GrantsFromEnv returns the number of grants in LOCKSMITH_FENCING_GRANTS,
// or def.
func GrantsFromEnv(def int) (int, error) {
	s := os.Getenv("LOCKSMITH_FENCING_GRANTS")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("LOCKSMITH_FENCING_GRANTS=%q is not a positive count", s)
	}
	return n, nil
}

// Locker returns an Acquirer that takes fenced locks of the given TTL from
// client, and the function Collect needs to stop on errors no retry can
// cure (bad arguments).
func Locker(client *redlock.Client, ttl time.Duration) (Acquirer, func(error) bool) {
	acquire := func(ctx context.Context, resource string) (uint64, func(), error) {
		l, err := client.Lock(ctx, resource, ttl)
		if err != nil {
			return 0, nil, err
		}
		return l.Token(), func() { l.Unlock(ctx) }, nil
	}
	fatal := func(err error) bool { return errors.Is(err, redlock.ErrInvalidArgument) }
	return acquire, fatal
}

// Report checks the grants of every resource and returns their number and
// the violations, each prefixed with its resource.
func Report(grants map[string][]Grant) (total int, violations []string) {
	for resource, gs := range grants {
		total += len(gs)
		for _, v := range Check(gs) {
			violations = append(violations, resource+": "+v)
		}
	}
	return total, violations
}
