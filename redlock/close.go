package redlock

import (
	"context"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/settle"
)

// Close ends what c owns and waits for it: once Close is called, every
// call of c returns ErrClosed, a Lock call waiting to retry returns an
// error matching ErrClosed and ErrNotAcquired, an Extend or Resume waiting
// for another extend round of its Lock returns ErrClosed, and the renewals of
// KeepAlive and Do stop, their contexts cancelled with ErrClosed as the
// cause. Once the calls in progress have returned, Close releases the
// locks that c handed out and the program still refers to, unless Unlock
// was called on them or [WithReleaseOnClose] is off: as Unlock does,
// detached from ctx's cancellation and each node bounded by the per-node
// timeout. It then waits for every
// request still running, and last calls Wait on each Conn that implements
// [driver.Waiter]. Close the Redis clients behind the Conns only after
// Close returned.
//
// Close returns ctx.Err() when ctx ends before all that is done; what was
// started goes on, each request bounded by its node timeout, and a later
// Close waits for it again. Close may be called more than once, also at
// once: each call waits as the first does and returns nil once all has
// ended.
func (c *Client) Close(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	c.closing.Do(func() {
		c.calls.close()
		close(c.closed)
	})
	// The locks still held are known only once every call that could
	// grant one has returned.
	if err := c.calls.wait(ctx); err != nil {
		return err
	}
	c.releasing.Do(c.releaseHeld)
	if err := c.calls.wait(ctx); err != nil {
		return err
	}
	if err := c.requests.wait(ctx); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if w, ok := n.Conn().(driver.Waiter); ok {
			if err := w.Wait(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// WithReleaseOnClose sets whether [Client.Close] releases the locks still
// held. Turn it off for locks meant to outlive the Client: handed to
// another process, which takes them over with Resume, or left to expire
// at the end of their TTL. Default: on.
func WithReleaseOnClose(on bool) Option {
	return optionFunc(func(c *config) { c.closeReleases = on })
}

// releaseHeld releases each Lock of c that was granted and on which Unlock
// was never called, each on a goroutine of its own that c.calls counts,
// unless WithReleaseOnClose turned that off. No call of c runs any more,
// so none can start an Unlock or an extend round meanwhile.
func (c *Client) releaseHeld() {
	if !c.cfg.closeReleases {
		return
	}
	for _, l := range c.live.all() {
		l.mu.Lock()
		held := !l.unlocking && !l.acquired.IsZero()
		l.mu.Unlock()
		if !held {
			continue
		}
		c.calls.Add(1)
		go func() {
			defer c.calls.Done()
			_ = l.release(context.Background()) // best effort: the keys expire anyway
		}()
	}
}

func init() {
	settle.Register(func(ctx context.Context, client any) error {
		return client.(*Client).requests.wait(ctx)
	})
}
