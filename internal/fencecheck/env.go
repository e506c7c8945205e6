package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
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

// Lease is a fenced lock as its holder sees it: *redlock.Lock is one.
// fencecheck takes it as an interface so that it does not import the
// package whose tests use it.
type Lease interface {
	Token() uint64
	Unlock(ctx context.Context) error
}

// Locker returns an Acquirer that takes fenced locks with lock, and the
// function Collect needs to stop on errors no retry can cure: those that
// match fatal with errors.Is (for redlock, ErrInvalidArgument).
func Locker[L Lease](lock func(ctx context.Context, resource string) (L, error), fatal error) (Acquirer, func(error) bool) {
	acquire := func(ctx context.Context, resource string) (uint64, func(), error) {
		l, err := lock(ctx, resource)
		if err != nil {
			return 0, nil, err
		}
		return l.Token(), func() { l.Unlock(ctx) }, nil
	}
	return acquire, func(err error) bool { return errors.Is(err, fatal) }
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
