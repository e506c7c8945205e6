package redlock

import "time"

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

// NodeTimeout returns the per-node timeout c uses for a lock of ttl.
func NodeTimeout(c *Client, ttl time.Duration) (time.Duration, error) {
	req, err := c.newRequest([]string{"k"}, ttl)
	return req.nodeTimeout, err
}
