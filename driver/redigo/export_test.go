package redigo

// HasSpare reports whether c keeps a connection for its next call.
func HasSpare(c *Conn) bool {
	p, ok := c.spare.Take()
	if ok && !c.spare.Put(p) {
		closeConn(p.conn)
	}
	return ok
}
