// Package resp is a minimal RESP2 client used by the integration harness to
// set up and inspect real Redis servers (PING, CONFIG, CLUSTER, SCRIPT FLUSH,
// ...) without depending on any of the Redis client libraries under test.
//
// Replies are normalized the way the locksmith driver contract normalizes
// them: integer -> int64, simple or bulk string -> string, array -> []any
// (recursively), nil bulk or nil array -> nil. A Redis error reply is returned
// as a *[Error].
//
// # Concurrency
//
// A [Conn] carries one request at a time and is not safe for concurrent use.
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
	"time"
)

// maxBulkLen bounds a bulk string reply; it is Redis's own proto-max-bulk-len
// default, so a corrupt length cannot make the client allocate without limit.
const maxBulkLen = 512 << 20

// maxDepth bounds the nesting of array replies.
const maxDepth = 32

// Error is an error reply sent by the server, such as "ERR unknown command" or
// "NOSCRIPT No matching script". The connection stays usable after it.
type Error struct {
	// Message is the reply text without the leading '-'.
	Message string
}

// Error returns the server's message.
func (e *Error) Error() string { return e.Message }

// Conn is one connection to a Redis server.
type Conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// Dial connects to addr ("host:port") over TCP, or over TLS when tlsConfig
// is non-nil. An empty tlsConfig.ServerName is filled from addr's host, as
// the Redis clients under test do. ctx bounds the connection set-up only.
func Dial(ctx context.Context, addr string, tlsConfig *tls.Config) (*Conn, error) {
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
	return &Conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Do sends one command and reads its reply. A Redis error reply comes back as
// a *[Error] and leaves the connection usable; any other error (I/O, protocol,
// ctx done) means the connection must be closed. When ctx ends first, the
// returned error wraps ctx.Err().
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("resp: Do needs a command")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline() // zero means none
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A cancellation without a deadline unblocks the I/O by moving the
	// deadline into the past.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	reply, err := c.roundTrip(args)
	if err != nil {
		var redisErr *Error
		if errors.As(err, &redisErr) {
			return nil, err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, errors.Join(ctxErr, err)
		}
		return nil, err
	}
	return reply, nil
}

func (c *Conn) roundTrip(args []string) (any, error) {
	// A command is an array of bulk strings.
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	return c.readReply(0)
}

func (c *Conn) readReply(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("resp: reply nested too deeply")
	}
	line, err := c.readLine()
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
		if _, err := io.ReadFull(c.r, buf); err != nil {
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
			item, err := c.readReply(depth + 1)
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
func (c *Conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
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
