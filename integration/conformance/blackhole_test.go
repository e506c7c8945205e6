package conformance

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fullBacklog is a loopback listener whose accept queue is full and stays
// so: nothing accepts, so a connect to it waits, its SYNs dropped, until
// the client's dial timeout or until release closes the listener, after
// which the client's next SYN is refused.
type fullBacklog struct {
	fd     int
	addr   string
	queued []net.Conn // the connections that fill the queue
	closed bool
}

// newFullBacklog listens with a backlog of 0 (on Linux, room for one
// connection that nobody accepts) and connects until a connect no longer
// completes.
func newFullBacklog(t *testing.T) *fullBacklog {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	b := &fullBacklog{fd: fd}
	t.Cleanup(b.release)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	b.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// A connect that has not completed after fillWait is one whose SYN
	// was dropped: the queue is full. This wait ends a loop, it is no
	// assertion.
	const fillWait = 500 * time.Millisecond
	for range 16 {
		c, err := net.DialTimeout("tcp", b.addr, fillWait)
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			return b
		}
		if err != nil {
			t.Fatalf("filling the backlog of %s: %v", b.addr, err)
		}
		b.queued = append(b.queued, c)
	}
	t.Fatalf("the backlog of %s did not fill", b.addr)
	return nil
}

// release closes the listener and the connections queued on it.
func (b *fullBacklog) release() {
	if b.closed {
		return
	}
	b.closed = true
	syscall.Close(b.fd)
	for _, c := range b.queued {
		c.Close()
	}
}
