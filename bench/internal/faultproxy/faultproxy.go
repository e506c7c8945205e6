// Package faultproxy is a TCP proxy on a loopback port for the gray-failure
// benchmark: it forwards connections to one server, and can add latency to
// what the server sends back or close its port.
//
// Latency is added per chunk: every chunk read from the server is written
// to the client once the delay has passed since it was read, in order, so a
// delay adds to every reply without limiting throughput. Requests are
// forwarded at once. A request-reply exchange therefore takes the delay
// longer, as with a link that is slow in one direction.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds the dial to the server for each new connection, and
// so how long Close may wait for one in progress.
const dialTimeout = time.Second

// chunkSize is the largest chunk read from the server at once.
const chunkSize = 32 << 10

// queuedChunks is how many delayed chunks one connection may hold before
// reading from the server waits.
const queuedChunks = 256

// Proxy forwards the connections made to [Proxy.Addr] to one server. Its
// methods are safe for concurrent use.
type Proxy struct {
	upstream string
	listener net.Listener
	delay    atomic.Int64 // time.Duration added to each chunk from the server

	mu     sync.Mutex
	closed bool                  // the port is closed: no connection is kept
	conns  map[net.Conn]struct{} // both ends of every proxied connection

	wg sync.WaitGroup // the accept loop and every connection's goroutines
}

// Start listens on a free loopback port and forwards every connection made
// to it to upstream (host:port), with no delay until [Proxy.SetDelay].
func Start(upstream string) (*Proxy, error) {
	if upstream == "" {
		return nil, errors.New("faultproxy: empty upstream address")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		upstream: upstream,
		listener: listener,
		conns:    make(map[net.Conn]struct{}),
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetDelay sets the latency added to every chunk read from the server from
// now on, on every connection. It must not be negative; 0 forwards at once.
func (p *Proxy) SetDelay(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("faultproxy: negative delay %v", d)
	}
	p.delay.Store(int64(d))
	return nil
}

// Refuse closes the proxy's port and every connection through it: from
// then on a connection attempt is refused by the kernel, as by a host where
// nothing listens on that port. It may be called more than once.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.listener.Close()
	for conn := range p.conns {
		_ = conn.Close()
	}
	clear(p.conns)
}

// Close refuses connections like [Proxy.Refuse] and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() {
	p.Refuse()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // the listener is closed
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// track records conns so that Refuse closes them, and reports false, with
// conns closed, when the proxy has already been refused.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, conn := range conns {
			_ = conn.Close()
		}
		return false
	}
	for _, conn := range conns {
		p.conns[conn] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, conn := range conns {
		delete(p.conns, conn)
		_ = conn.Close()
	}
}

func (p *Proxy) serve(client net.Conn) {
	if !p.track(client) {
		return
	}
	server, err := net.DialTimeout("tcp", p.upstream, dialTimeout)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	// When either direction ends, both connections are closed, which
	// ends the other.
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(server, client)
		p.untrack(client, server)
	})
	p.forwardDelayed(client, server)
	p.untrack(client, server)
	wg.Wait()
}

// A chunk is data read from the server and the time it is due at the
// client.
type chunk struct {
	data []byte
	due  time.Time
}

// forwardDelayed copies from server to client, holding each chunk for the
// delay in force when it was read, until either side fails.
func (p *Proxy) forwardDelayed(client, server net.Conn) {
	queue := make(chan chunk, queuedChunks)
	var wg sync.WaitGroup
	wg.Go(func() {
		failed := false
		for c := range queue {
			if failed {
				continue // drain, so that the reader never blocks
			}
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			if _, err := client.Write(c.data); err != nil {
				failed = true
				p.untrack(client, server) // ends the reader below
			}
		}
	})
	buf := make([]byte, chunkSize)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			due := time.Now().Add(time.Duration(p.delay.Load()))
			queue <- chunk{data: append([]byte(nil), buf[:n]...), due: due}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	wg.Wait()
}
