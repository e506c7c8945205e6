package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// chunkSize is the largest chunk read at once.
const chunkSize = 16 << 10

// sparedChunks is how many buffers each direction of a connection starts
// with: enough for the reader to read the next chunk while a few are held,
// so that request-reply traffic never needs another once the connection
// is open. More are made when more chunks are held at once, and kept.
const sparedChunks = 4

// queuedChunks is how many delayed chunks one direction of a connection
// may hold before reading waits.
const queuedChunks = 256

// A chunk is data read from one side and the time, on the Line's clock,
// it is due at the other.
type chunk struct {
	data []byte // a prefix of buf
	buf  []byte // chunkSize bytes, recycled once data is written
	due  time.Duration
}

// forward copies from src to dst, holding each chunk for the delay in
// force when it was read, until either side fails; then it closes both
// (through untrack) and returns. Reading and writing run on two
// goroutines, so that a delay adds to every chunk without limiting
// throughput.
//
// Buffers are made when the connection opens and recycled, so that a
// proxied connection in steady use allocates nothing: the benchmarks count
// every allocation of the process, the proxy's included, from the end of
// their warm-up.
func (p *Proxy) forward(dst, src net.Conn, delay *atomic.Int64) {
	queue := make(chan chunk, queuedChunks)
	free := make(chan []byte, queuedChunks)
	for range sparedChunks {
		free <- make([]byte, chunkSize)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		ready := make(chan struct{}, 1)
		failed := false
		for c := range queue {
			if !failed {
				p.line.waitUntil(c.due, ready)
				if _, err := dst.Write(c.data); err != nil {
					failed = true
					p.untrack(dst, src) // ends the reader below
				}
			}
			// Keep draining, so that the reader never blocks.
			select {
			case free <- c.buf:
			default:
			}
		}
	})
	for {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, chunkSize)
		}
		n, err := src.Read(buf)
		if n > 0 {
			due := p.line.now() + time.Duration(delay.Load())
			queue <- chunk{data: buf[:n], buf: buf, due: due}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	wg.Wait()
	p.untrack(dst, src)
}
