// Package settle lets the test harnesses of this repository (redlocktest,
// the integration suite, redlock's own tests) wait until no request of a
// redlock.Client runs, without closing the Client. A call returns once a
// quorum decided it and its other requests go on; a harness that then
// injects a fault or reads the nodes' keys must let them land first.
// Programs close the Client instead (redlock.Client.Close).
package settle

import "context"

// wait is set by package redlock, which this package cannot import.
var wait func(ctx context.Context, client any) error

// Register is called once, by package redlock's init, with the function
// that waits for a *redlock.Client's requests.
func Register(f func(ctx context.Context, client any) error) { wait = f }

// Wait returns once no request of client, a *redlock.Client, runs, or
// with ctx.Err() when ctx ends first.
func Wait(ctx context.Context, client any) error { return wait(ctx, client) }
