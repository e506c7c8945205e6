package rueidis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Delays between Open's attempts to build its client: the first retry
// comes after minRebuild, each later one after twice the previous delay, up
// to maxRebuild, so a node that comes back is in use again within about
// maxRebuild.
const (
	minRebuild = 100 * time.Millisecond
	maxRebuild = 5 * time.Second
)

// errClosed is returned by the calls of a Conn from Open after Close.
var errClosed = errors.New("rueidis: Conn closed")

// Open returns a Conn for the node that option describes without waiting
// for the node. rueidis.NewClient connects at once and fails when the node
// is down, so a program that builds its clients with it cannot start while
// any one node is down; a Redlock needs only a majority. Open builds the
// client with rueidis.NewClient in a goroutine of its own instead, and
// tries again, at growing intervals of up to 5s, until it succeeds or
// [Conn.Close] is called. The Conn owns that client: Close closes it.
//
// While the first attempt runs, a call waits for it until its ctx ends.
// After an attempt failed, and until one succeeds, every call returns at
// once with an error that wraps the last attempt's, and redlock counts the
// node as failed, as it would a node that is down.
//
// Open returns an error only for an option without an InitAddress.
func Open(option rueidis.ClientOption) (*Conn, error) {
	if len(option.InitAddress) == 0 {
		return nil, errors.New("rueidis: Open needs an InitAddress")
	}
	o := &opened{
		option:    option,
		ready:     make(chan struct{}),
		attempted: make(chan struct{}),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	c := &Conn{opened: o, id: optionID(option, o)}
	c.hub = pubsub.NewHub(c.dialPubSub)
	go o.build()
	return c, nil
}

// Close stops a Conn from [Open]: it ends the attempts to build the client,
// waiting for one under way (rueidis bounds a dial by its Dialer's timeout,
// 5s by default), and closes the client once built. Calls after Close
// return an error. Close may be called more than once.
//
// For a Conn from [New], whose client is the caller's, Close does nothing.
func (c *Conn) Close() {
	if c != nil && c.opened != nil {
		c.opened.close()
	}
}

// optionID returns the NodeID of a Conn that Open builds from option.
func optionID(option rueidis.ClientOption, o *opened) string {
	if len(option.InitAddress) == 1 && option.Sentinel.MasterSet == "" {
		if id, err := driver.AddrNodeID("tcp", option.InitAddress[0]); err == nil {
			return id
		}
	}
	return fmt.Sprintf("%T@%p", o, o)
}

// opened is the client that Open builds in the background.
type opened struct {
	option rueidis.ClientOption

	ready     chan struct{} // closed once client is set
	client    rueidis.Client
	attempted chan struct{} // closed when the first attempt ended
	stop      chan struct{} // closed by close
	done      chan struct{} // closed when build returns
	once      sync.Once     // of close

	mu      sync.Mutex
	lastErr error // of the last failed attempt; nil before one failed
}

func (o *opened) build() {
	defer close(o.done)
	delay := minRebuild
	for {
		client, err := rueidis.NewClient(o.option)
		if err == nil {
			select {
			case <-o.stop:
				client.Close()
			default:
				o.client = client
				close(o.ready)
			}
			o.attemptEnded()
			return
		}
		o.mu.Lock()
		o.lastErr = err
		o.mu.Unlock()
		o.attemptEnded()
		timer := time.NewTimer(delay)
		select {
		case <-o.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		delay = min(2*delay, maxRebuild)
	}
}

// attemptEnded marks the end of an attempt to build the client.
func (o *opened) attemptEnded() {
	select {
	case <-o.attempted:
	default:
		close(o.attempted)
	}
}

func (o *opened) get(ctx context.Context) (rueidis.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.stopped() {
		return nil, errClosed
	}
	select {
	case <-o.ready:
		return o.client, nil
	case <-o.attempted:
	case <-o.stop:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// A select with both ready, as after Close, picks either: stop is
	// looked at alone first.
	if o.stopped() {
		return nil, errClosed
	}
	select {
	case <-o.ready:
		return o.client, nil
	default:
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return nil, fmt.Errorf("rueidis: no client for the node yet: %w", o.lastErr)
}

// stopped reports whether close has been called.
func (o *opened) stopped() bool {
	select {
	case <-o.stop:
		return true
	default:
		return false
	}
}

func (o *opened) close() {
	o.once.Do(func() {
		close(o.stop)
		<-o.done
		select {
		case <-o.ready:
			o.client.Close()
		default:
		}
	})
}
