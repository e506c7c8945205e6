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
	o := &opened{option: option, attempted: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
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
	option    rueidis.ClientOption
	attempted chan struct{} // closed when the first attempt ended
	stop      chan struct{} // closed by close
	done      chan struct{} // closed when build returns
	first     sync.Once     // closes attempted
	once      sync.Once     // of close

	mu      sync.Mutex
	client  rueidis.Client // nil until an attempt succeeded
	lastErr error          // of the last attempt
	closed  bool
}

func (o *opened) build() {
	defer close(o.done)
	for delay := minRebuild; ; delay = min(2*delay, maxRebuild) {
		client, err := rueidis.NewClient(o.option)
		o.mu.Lock()
		o.client, o.lastErr = client, err
		o.mu.Unlock()
		o.first.Do(func() { close(o.attempted) })
		if err == nil {
			return // close closes the client
		}
		select {
		case <-o.stop:
			return
		case <-time.After(delay):
		}
	}
}

func (o *opened) get(ctx context.Context) (rueidis.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-o.attempted:
	case <-o.stop:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return nil, errClosed
	case o.client != nil:
		return o.client, nil
	}
	return nil, fmt.Errorf("rueidis: no client for the node yet: %w", o.lastErr)
}

func (o *opened) close() {
	o.once.Do(func() {
		o.mu.Lock()
		o.closed = true
		o.mu.Unlock()
		close(o.stop)
		<-o.done
		if o.client != nil { // build has returned: no lock needed
			o.client.Close()
		}
	})
}
