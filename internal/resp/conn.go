package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// Conn is a driver.Conn that keeps a small pool of Wires to one server. It
// is safe for concurrent use.
type Conn struct {
	addr string

	mu   sync.Mutex
	idle []*Wire
}

var _ driver.Conn = (*Conn)(nil)

// Dial returns a Conn for the server at addr. Connections are opened on
// demand.
func Dial(addr string) *Conn {
	return &Conn{addr: addr}
}

// Close closes the idle connections.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, w := range c.idle {
		errs = append(errs, w.Close())
	}
	c.idle = nil
	return errors.Join(errs...)
}

// Eval implements driver.Conn.
func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.Do(ctx, evalArgs("EVAL", script, keys, args)...)
}

// EvalSha implements driver.Conn.
func (c *Conn) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return c.Do(ctx, evalArgs("EVALSHA", sha1, keys, args)...)
}

// ScriptLoad implements driver.Conn.
func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	reply, err := c.Do(ctx, "SCRIPT", "LOAD", script)
	if err != nil {
		return "", err
	}
	digest, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("resp: SCRIPT LOAD replied %T, want a string", reply)
	}
	return digest, nil
}

func evalArgs(cmd, script string, keys, args []string) []string {
	out := make([]string, 0, 3+len(keys)+len(args))
	out = append(out, cmd, script, strconv.Itoa(len(keys)))
	out = append(out, keys...)
	return append(out, args...)
}

// Do sends one command on an idle connection, or a new one, and returns
// its reply as [Wire.Do] does. A connection that failed other than with an
// error reply may hold a half-read reply, and one whose deadline ctx's end
// moved may be moved again later: both are closed, never reused.
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	reply, interrupted, err := w.do(ctx, args)
	if interrupted || err != nil && !isReply(err) {
		w.Close()
		// A call that ctx ended reports only that, even when the reply
		// came in meanwhile: the caller gave up on it.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("resp: %w", ctxErr)
		}
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			return nil, fmt.Errorf("resp: %w", context.DeadlineExceeded)
		}
		return nil, err
	}
	c.put(w)
	return reply, err
}

func (c *Conn) get(ctx context.Context) (*Wire, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		w := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return w, nil
	}
	c.mu.Unlock()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	return newWire(nc), nil
}

func (c *Conn) put(w *Wire) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, w)
}
