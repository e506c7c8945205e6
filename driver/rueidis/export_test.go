package rueidis

import "context"

// WaitForSpare waits until no goroutine of c is opening a spare connection,
// without giving back the one it keeps, as Wait would.
func WaitForSpare(ctx context.Context, c *Conn) error { return c.background.Wait(ctx) }

// HasSpare reports whether c keeps a spare connection.
func HasSpare(c *Conn) bool {
	putBack, ok := HoldSpare(c)
	if ok {
		putBack()
	}
	return ok
}

// HoldSpare takes c's spare connection, as a call does, and returns the
// function that puts it back; ok is false when c keeps none.
func HoldSpare(c *Conn) (putBack func(), ok bool) {
	d, ok := c.spare.Take()
	if !ok {
		return nil, false
	}
	return func() {
		if !c.spare.Put(d) {
			c.giveBack(d)
		}
	}, true
}

// Dedicated returns how many dedicated connections c has opened and not
// given back.
func Dedicated(c *Conn) int32 { return c.dedicated.Load() }
