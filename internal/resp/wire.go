// Package resp is a minimal RESP2 client for locksmith's tests, benchmarks
// and test harnesses, built on the standard library alone so that they
// reach real and in-process servers without depending on a Redis client
// library under test. Applications use one of the adapter modules instead.
//
// A [Wire] is one connection (plain or TLS) that carries one request at a
// time: the integration harness sets up and inspects servers with it. A
// [Conn] is a driver.Conn over a small pool of Wires, and a [Notifier]
// adds driver.Notifier to it.
//
// Replies are normalized the way the driver contract normalizes them:
// integer -> int64, simple or bulk string -> string, array -> []any
// (recursively), nil bulk or nil array -> nil. A Redis error reply is
// returned as an *[Error]; inside an array it is kept as an element.
package resp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// maxBulkLen bounds a bulk string reply; it is Redis's own
// proto-max-bulk-len default, so a corrupt length cannot make the client
// allocate without limit.
const maxBulkLen = 512 << 20

// maxDepth bounds the nesting of array replies.
const maxDepth = 32

// Error is an error reply sent by the server, such as "ERR unknown command"
// or "NOSCRIPT No matching script". The connection stays usable after it.
type Error struct {
	// Message is the reply text without the leading '-'.
	Message string
}

// Error returns the server's message.
func (e *Error) Error() string { return e.Message }

// Is makes a NOSCRIPT reply match driver.ErrNoScript.
func (e *Error) Is(target error) bool {
	return target == driver.ErrNoScript && strings.HasPrefix(e.Message, "NOSCRIPT")
}

func isReply(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Wire is one connection to a Redis server. It carries one request at a
// time and is not safe for concurrent use.
type Wire struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// DialWire connects to addr ("host:port") over TCP, or over TLS when
// tlsConfig is non-nil. An empty tlsConfig.ServerName is filled from addr's
// host, as the Redis clients under test do. ctx bounds the connection
// set-up only.
func DialWire(ctx context.Context, addr string, tlsConfig *tls.Config) (*Wire, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		cfg := tlsConfig.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				_ = nc.Close()
				return nil, err
			}
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("resp: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	return newWire(nc), nil
}

func newWire(nc net.Conn) *Wire {
	return &Wire{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
}

// Close closes the connection.
func (w *Wire) Close() error { return w.nc.Close() }

// Do sends one command and reads its reply. A Redis error reply comes back
// as an *[Error] and leaves the connection usable; any other error (I/O,
// protocol, ctx done) means the connection must be closed. When ctx ends
// first, the returned error wraps ctx.Err().
func (w *Wire) Do(ctx context.Context, args ...string) (any, error) {
	reply, _, err := w.do(ctx, args)
	return reply, err
}

// do is Do, and reports whether ctx's end moved the connection's deadline:
// that may happen even after the reply was read, and its goroutine may
// still be running, so a pool must not hand the connection out again.
func (w *Wire) do(ctx context.Context, args []string) (reply any, interrupted bool, err error) {
	if len(args) == 0 {
		return nil, false, errors.New("resp: Do needs a command")
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	deadline, _ := ctx.Deadline() // zero means none
	if err := w.nc.SetDeadline(deadline); err != nil {
		return nil, false, err
	}
	// A cancellation without a deadline unblocks the I/O by moving the
	// deadline into the past.
	stop := context.AfterFunc(ctx, func() { _ = w.nc.SetDeadline(time.Unix(1, 0)) })
	reply, err = w.roundTrip(args)
	interrupted = !stop()
	if err != nil && !isReply(err) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, interrupted, errors.Join(ctxErr, err)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil, interrupted, errors.Join(context.DeadlineExceeded, err)
		}
	}
	return reply, interrupted, err
}

func (w *Wire) send(args []string) error {
	// A command is an array of bulk strings.
	fmt.Fprintf(w.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w.w, "$%d\r\n%s\r\n", len(a), a)
	}
	return w.w.Flush()
}

func (w *Wire) roundTrip(args []string) (any, error) {
	if err := w.send(args); err != nil {
		return nil, err
	}
	return w.read(0)
}

func (w *Wire) read(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("resp: reply nested too deeply")
	}
	line, err := w.readLine()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("resp: empty reply line")
	}
	body := string(line[1:])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, &Error{Message: body}
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("resp: bad integer reply %q", body)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulkLen {
			return nil, fmt.Errorf("resp: bad bulk length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(w.r, buf); err != nil {
			return nil, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return nil, errors.New("resp: bulk string not terminated by CRLF")
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("resp: bad array length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		items := make([]any, 0, min(n, 1024))
		for range n {
			item, err := w.read(depth + 1)
			var redisErr *Error
			switch {
			case errors.As(err, &redisErr):
				// An error element (e.g. inside an EXEC reply) is kept
				// as a value so the rest of the array is still read.
				item = redisErr
			case err != nil:
				return nil, err
			}
			items = append(items, item)
		}
		return items, nil
	default:
		return nil, fmt.Errorf("resp: unknown reply type %q", line[0])
	}
}

// readLine returns one CRLF-terminated line without the CRLF.
func (w *Wire) readLine() ([]byte, error) {
	line, err := w.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("resp: reply line too long")
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errors.New("resp: reply line not terminated by CRLF")
	}
	return line[:len(line)-2], nil
}
