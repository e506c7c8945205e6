// Package faultproxy is a TCP proxy on a loopback port for the benchmarks:
// it forwards connections to one server, can add latency in either
// direction, and can close its port.
//
// Latency is added per chunk: every chunk read from one side is written to
// the other once the delay in force for that direction has passed since it
// was read, in order, so a delay adds to every request or reply without
// limiting throughput. With a delay d each way, a request-reply exchange
// takes 2d longer, as over a link with a round trip of 2d; with a delay on
// replies only, the link is slow in one direction.
//
// Delays are kept by a [Line], shared by every proxy of a benchmark, which
// is precise below a millisecond, where timers are not.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds the dial to the server for each new connection, and
// so how long Close may wait for one in progress.
const dialTimeout = time.Second

// Proxy forwards the connections made to [Proxy.Addr] to one server. Its
// methods are safe for concurrent use.
type Proxy struct {
	upstream string
	listener net.Listener
	line     *Line

	// The time.Duration added to each chunk from the client and from the
	// server.
	requestDelay, replyDelay atomic.Int64

	mu     sync.Mutex
	closed bool                  // the port is closed: no connection is kept
	conns  map[net.Conn]struct{} // both ends of every proxied connection

	wg sync.WaitGroup // the accept loop and every connection's goroutines
}

// Start listens on a free loopback port and forwards every connection made
// to it to upstream (host:port), with no delay until [Proxy.SetDelays].
// Delays are kept by line, which must outlive the proxy.
func Start(line *Line, upstream string) (*Proxy, error) {
	if line == nil {
		return nil, errors.New("faultproxy: nil Line")
	}
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
		line:     line,
		conns:    make(map[net.Conn]struct{}),
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetDelays sets the latency added from now on, on every connection, to
// every chunk read from the client (request) and from the server (reply).
// Neither may be negative; 0 forwards at once.
func (p *Proxy) SetDelays(request, reply time.Duration) error {
	if request < 0 || reply < 0 {
		return fmt.Errorf("faultproxy: negative delay (request %v, reply %v)", request, reply)
	}
	p.requestDelay.Store(int64(request))
	p.replyDelay.Store(int64(reply))
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
	wg.Go(func() { p.forward(server, client, &p.requestDelay) })
	p.forward(client, server, &p.replyDelay)
	wg.Wait()
}
