package redigo_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// hangLimit ends the wait for a Conn's pub/sub connection to end; it is
// no assertion about speed.
const hangLimit = time.Minute

// pausableProxy forwards connections to a server and can stop forwarding,
// as a server stopped with SIGSTOP stops answering: connections stay open
// and new ones are accepted, but nothing comes back until resume.
type pausableProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu      sync.Mutex
	resumed chan struct{} // closed while forwarding
	conns   []net.Conn
}

func newPausableProxy(t *testing.T, target string) *pausableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausableProxy{ln: ln, target: target, resumed: make(chan struct{})}
	close(p.resumed)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *pausableProxy) addr() string { return p.ln.Addr().String() }

func (p *pausableProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Go(func() { p.copy(server, client) })
		p.wg.Go(func() { p.copy(client, server) })
	}
}

func (p *pausableProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.resumed
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *pausableProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resumed = make(chan struct{})
}

func (p *pausableProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resumed:
	default:
		close(p.resumed)
	}
}

func (p *pausableProxy) close() {
	p.resume()
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// blackHole accepts connections and never answers, until release closes
// them, as a server that hangs during a connection's handshake does.
type blackHole struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	b.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Go(func() { io.Copy(io.Discard, c) })
		}
	})
	t.Cleanup(b.release)
	return b
}

func (b *blackHole) addr() string { return b.ln.Addr().String() }

func (b *blackHole) release() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
