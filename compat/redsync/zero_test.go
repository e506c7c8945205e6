package redsync_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/compat/redsync"
)

// A Mutex or Redsync not made by New and NewMutex is reported by every
// call that would contact the nodes, with an error naming what to call,
// never a panic nor a failure that a retry could mend.
func TestZeroValuesSayWhatToCall(t *testing.T) {
	var zero redsync.Mutex
	var nilMutex *redsync.Mutex
	var zeroSync redsync.Redsync
	fromZero := zeroSync.NewMutex("k")
	for _, tc := range []struct {
		name, want string
		call       func() error
	}{
		{"zero Mutex Lock", "NewMutex(name)", zero.Lock},
		{"zero Mutex TryLock", "NewMutex(name)", zero.TryLock},
		{"zero Mutex Unlock", "NewMutex(name)", func() error { _, err := zero.Unlock(); return err }},
		{"zero Mutex Extend", "NewMutex(name)", func() error { _, err := zero.Extend(); return err }},
		{"zero Mutex Valid", "NewMutex(name)", func() error { _, err := zero.Valid(); return err }},
		{"nil Mutex Lock", "NewMutex(name)", nilMutex.Lock},
		{"nil Mutex TryLock", "NewMutex(name)", nilMutex.TryLock},
		{"nil Mutex Unlock", "NewMutex(name)", func() error { _, err := nilMutex.Unlock(); return err }},
		{"nil Mutex Extend", "NewMutex(name)", func() error { _, err := nilMutex.Extend(); return err }},
		{"nil Mutex Valid", "NewMutex(name)", func() error { _, err := nilMutex.Valid(); return err }},
		{"Mutex of a zero Redsync", "redsync.New(pools...)", fromZero.Lock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "WithTries") {
				t.Errorf("got %v; want an error naming %s", err, tc.want)
			}
			if errors.Is(err, redsync.ErrFailed) {
				t.Errorf("got %v, matching ErrFailed; want a configuration error that no retry mends", err)
			}
		})
	}
	if nilMutex.Name() != "" || nilMutex.Value() != "" || !nilMutex.Until().IsZero() {
		t.Errorf("a nil *Mutex reports a name, value or validity")
	}
}
