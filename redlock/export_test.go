package redlock

// Waiting returns how many Lock calls of c wait in the queue of key, so
// that tests can order waiters without sleeping.
func Waiting(c *Client, key string) int {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	if kw, ok := c.waits.keys[key]; ok {
		return len(kw.queue)
	}
	return 0
}
