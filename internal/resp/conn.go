// Package resp is a minimal RESP2 client that implements driver.Conn over
// plain TCP. The root module's tests use it to reach in-process servers
// without depending on a Redis client library; applications use one of the
// adapter modules instead.
package resp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// Error is an error reply from the server.
type Error string

func (e Error) Error() string { return string(e) }

// Is makes a NOSCRIPT reply match driver.ErrNoScript.
func (e Error) Is(target error) bool {
	return target == driver.ErrNoScript && strings.HasPrefix(string(e), "NOSCRIPT")
}

// Conn is a driver.Conn that keeps a small pool of TCP connections to one
// server.
type Conn struct {
	addr string

	mu   sync.Mutex
	idle []*wire
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
		errs = append(errs, w.nc.Close())
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

// Do sends one command and returns its reply, normalized as driver.Conn
// documents. An error reply is returned as an Error.
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	// Cancellation interrupts a blocked read or write by moving the
	// deadline into the past.
	stop := context.AfterFunc(ctx, func() { w.nc.SetDeadline(time.Unix(1, 0)) })
	deadline, _ := ctx.Deadline()
	w.nc.SetDeadline(deadline)
	reply, err := w.roundTrip(args)
	if !stop() || err != nil && !isReply(err) {
		// The connection may hold a half-read reply: never reuse it.
		w.nc.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("resp: %w", ctxErr)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil, fmt.Errorf("resp: %w", context.DeadlineExceeded)
		}
		return nil, err
	}
	c.put(w)
	return reply, err
}

func isReply(err error) bool {
	var e Error
	return errors.As(err, &e)
}

func (c *Conn) get(ctx context.Context) (*wire, error) {
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

func (c *Conn) put(w *wire) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, w)
}

func newWire(nc net.Conn) *wire {
	return &wire{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
}

type wire struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func (w *wire) roundTrip(args []string) (any, error) {
	fmt.Fprintf(w.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := w.w.Flush(); err != nil {
		return nil, err
	}
	return w.read()
}

func (w *wire) read() (any, error) {
	line, err := w.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("resp: malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, Error(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(w.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		items := make([]any, n)
		var firstErr error
		for i := range items {
			item, err := w.read()
			if err != nil && !isReply(err) {
				return nil, err
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
			items[i] = item
		}
		return items, firstErr
	}
	return nil, fmt.Errorf("resp: unknown reply type %q", kind)
}
