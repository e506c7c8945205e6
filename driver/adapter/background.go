package adapter

import (
	"context"
	"sync"
)

// Background counts the goroutines that run a Conn's client calls, so that
// the calls which returned early because their ctx ended can be waited for
// while they finish in the background, as can the calls that [Run] makes on
// a goroutine whose caller does not wait for them past their ctx. A Conn
// keeps one, usually as a field, passes it to every [Run] and implements
// [driver.Waiter] with its Wait.
//
// The zero value is ready to use. A Background must not be copied after
// first use. Its methods may be called concurrently.
type Background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while n is zero
}

// Go runs f in a goroutine of its own, counted until f returns. [Run] calls
// it; an adapter calls it itself for other work that may outlive a call.
func (b *Background) Go(f func()) {
	b.Begin()
	go func() {
		defer b.End()
		f()
	}()
}

// Begin counts a call that runs on the calling goroutine until the matching
// End, so that Wait waits for it too; a nil b counts nothing. Run counts
// the calls it makes on the calling goroutine for a caller that does not
// wait for them (see Run) so; an adapter does the same for a call it runs
// on the calling goroutine itself, as on a connection a [Spare] kept,
// since that goroutine may be one whose caller does not wait for it.
func (b *Background) Begin() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
}

// End ends a call counted by Begin. Each Begin needs one End: an End while
// nothing is counted is ignored, but one more than the Begins while other
// calls are counted ends one of theirs.
func (b *Background) End() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		return
	}
	b.n--
	if b.n == 0 && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
}

// Wait returns nil as soon as no goroutine started by Go is running and no
// call counted by Begin has ended with End (at once when there are none),
// or ctx.Err() when ctx ends first. One started while Wait waits is waited
// for as well.
func (b *Background) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return nil
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	idle := b.idle
	b.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
