package redigo_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/redigo"
)

// hangLimit ends the wait for a call that ignores its ctx; a Conn that
// honours ctx returns long before.
const hangLimit = 20 * time.Second

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

// returnsWhileStalled calls Eval with a short ctx and fails the test unless
// the call returns, with an error matching ctx.Err(), before hangLimit.
func returnsWhileStalled(t *testing.T, conn *redigo.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	type result struct {
		reply any
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := conn.Eval(ctx, `return 1`, nil, nil)
		done <- result{reply, err}
	}()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Eval against a stalled node = %v, %v; want an error matching context.DeadlineExceeded", r.reply, r.err)
		}
	case <-time.After(hangLimit):
		t.Fatalf("Eval against a stalled node had not returned %v after its ctx ended", hangLimit)
	}
}

// A pool that dials with Dial alone, which takes no ctx, does not hold a
// call past its ctx when the dial hangs.
func TestDialOnlyPoolBlackHole(t *testing.T) {
	hole := newBlackHole(t)
	pool := &redis.Pool{
		Dial: func() (redis.Conn, error) {
			// AUTH during the dial waits for a reply that never comes.
			return redis.Dial("tcp", hole.addr(), redis.DialPassword("secret"))
		},
	}
	defer pool.Close()
	conn := redigo.New(pool)
	returnsWhileStalled(t, conn)
	hole.release()
	waitBackground(t, conn)
}

// A TestOnBorrow PING to a server that stopped answering does not hold a
// call past its ctx.
func TestHealthCheckOnStalledServer(t *testing.T) {
	proxy := newPausableProxy(t, testServer(t))
	pool := newPool(t, proxy.addr(), func(p *redis.Pool) {
		p.TestOnBorrow = func(c redis.Conn, _ time.Time) error {
			_, err := c.Do("PING")
			return err
		}
	})
	conn := redigo.New(pool)
	if _, err := conn.Eval(context.Background(), `return 1`, nil, nil); err != nil {
		t.Fatalf("warm-up Eval: %v", err)
	}
	proxy.pause()
	returnsWhileStalled(t, conn)
	proxy.resume()
	waitBackground(t, conn)
}

// A call whose command reached a server that then stopped answering
// returns when its ctx ends.
func TestServerStalledMidCall(t *testing.T) {
	proxy := newPausableProxy(t, testServer(t))
	conn := redigo.New(newPool(t, proxy.addr(), nil))
	if _, err := conn.Eval(context.Background(), `return 1`, nil, nil); err != nil {
		t.Fatalf("warm-up Eval: %v", err)
	}
	proxy.pause()
	returnsWhileStalled(t, conn)
	proxy.resume()
	waitBackground(t, conn)
}
