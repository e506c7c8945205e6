package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlocktest"
)

// chargeInvoice charges the lines of an invoice under a lock held by Do. It
// must stop as soon as the lock is lost, since another process may be
// charging the same invoice by then.
func chargeInvoice(ctx context.Context, locker *redlock.Client, lines []string, charge func(ctx context.Context, line string) error) error {
	return locker.Do(ctx, "invoice:42", time.Second, func(ctx context.Context) error {
		for _, line := range lines {
			// Check right before each use of the resource.
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if err := charge(ctx, line); err != nil {
				return err
			}
		}
		return nil
	})
}

// The lock is lost while the first line is charged: the second line is
// never charged, and chargeInvoice says why.
func TestChargeInvoiceStopsWhenTheLockIsLost(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	locker := nodes.Client()

	var charged []string
	charge := func(ctx context.Context, line string) error {
		charged = append(charged, line)
		if line == "line 1" {
			// A slow charge during which a majority of the nodes lose
			// the lock.
			lock, _ := redlock.LockFromContext(ctx)
			nodes.LoseLock(lock)
			<-ctx.Done()
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // if the loss went unnoticed
	defer cancel()
	err := chargeInvoice(ctx, locker, []string{"line 1", "line 2"}, charge)
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("chargeInvoice: %v, want ErrLockLost", err)
	}
	if len(charged) != 1 {
		t.Errorf("charged %q, want only line 1", charged)
	}
}
