package rueidis

import "context"

// WaitForSpare waits until no goroutine of c is opening a spare connection,
// without giving back the one it keeps, as Wait would.
func WaitForSpare(ctx context.Context, c *Conn) error { return c.background.Wait(ctx) }

// HasSpare reports whether c keeps a spare connection.
func HasSpare(c *Conn) bool {
	d, ok := c.spare.Take()
	if ok && !c.spare.Put(d) {
		d.release()
	}
	return ok
}
