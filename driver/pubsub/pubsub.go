// Package pubsub shares one pub/sub connection of a Redis client among the
// subscribers of a
// [github.com/locksmith-go/locksmith/driver.Notifier].
//
// An adapter implements Notifier's Subscribe with a [Hub]: it implements
// [Conn] over its client's own pub/sub support (or fills in a [Hooked]),
// hands [NewHub] a function that opens one, and calls [Hub.Subscribe]. The Hub opens the connection
// for the first subscription, reconnects and subscribes again when it
// fails, and closes it after the last subscription ends. Its [Hub.Wait]
// implements [github.com/locksmith-go/locksmith/driver.Waiter].
//
// Programs that only take locks never import this package.
package pubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Conn is one pub/sub connection of a client, as a [Hub] drives it. An
// adapter implements it over its client's own pub/sub support and hands
// the Hub a function that opens one (see [NewHub]).
//
// The Hub never calls Subscribe and Unsubscribe concurrently with each
// other, but calls them while Receive runs in another goroutine, and it
// calls Close last, once.
type Conn interface {
	// Subscribe sends SUBSCRIBE for the channels. It need not wait for
	// the server's confirmations: Receive reports them.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe sends UNSUBSCRIBE for the channels. The Hub ignores
	// its error: messages on channels it no longer has subscribers for
	// are dropped.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive reads from the connection and reports to hub every message
	// ([Hub.Message]), subscription confirmation ([Hub.Confirmed]) and
	// error reply ([Hub.Refused]) until ctx ends, when it returns nil, or
	// the connection fails, when it returns the error and the Hub opens
	// another connection. hub is the Hub that opened the connection.
	Receive(ctx context.Context, hub *Hub) error
	// Close releases the connection. The Hub calls it after Receive has
	// returned, or instead of Receive when Subscribe failed.
	Close()
}

// A Pinger is a [Conn] whose Receive cannot tell a quiet connection from
// a broken one by itself: it reads with a timeout of its own and counts
// the connection broken when nothing arrives for that long, and a read
// under way ends only when something arrives. While Receive runs, the Hub
// calls Ping every [PingInterval], so that the replies keep such a read
// from timing out on a quiet channel, and once more when Receive's ctx
// ends, so that the reply wakes the read. A read timeout of a few
// PingIntervals then tells a broken connection within seconds.
//
// The Hub never calls Ping concurrently with Subscribe, Unsubscribe or
// Close.
type Pinger interface {
	Conn
	// Ping sends PING on the connection; Receive reads the reply. An
	// error of Ping is ignored: a broken connection fails Receive too.
	Ping(ctx context.Context) error
}

// Hooked is a [Conn] over a dedicated connection of a client that reports
// what it reads through callbacks of its own, as rueidis and valkey-go do:
// the callbacks call [Hub.Message] and [Hub.Confirmed], and Receive only
// waits for the connection to end.
type Hooked struct {
	// Send sends SUBSCRIBE for the channels, or UNSUBSCRIBE when
	// subscribe is false.
	Send func(ctx context.Context, subscribe bool, channels []string) error
	// Ended receives an error, or is closed, once the callbacks will not
	// be called again.
	Ended <-chan error
	// Release gives the connection back to the client.
	Release func()
}

// Subscribe implements [Conn] with Send.
func (h Hooked) Subscribe(ctx context.Context, channels ...string) error {
	return h.Send(ctx, true, channels)
}

// Unsubscribe implements [Conn] with Send.
func (h Hooked) Unsubscribe(ctx context.Context, channels ...string) error {
	return h.Send(ctx, false, channels)
}

// Receive implements [Conn]: it returns what Ended receives, or nil once
// ctx ends.
func (h Hooked) Receive(ctx context.Context, _ *Hub) error {
	select {
	case err := <-h.Ended:
		return err
	case <-ctx.Done():
		return nil
	}
}

// Close implements [Conn] with Release.
func (h Hooked) Close() { h.Release() }

// PingInterval is how often a Hub pings the connection of a [Pinger].
const PingInterval = time.Second

// Reconnection delays of a Hub whose connection failed: the first retry
// comes after minRedial, each later one after twice the previous delay, up
// to maxRedial. The cap is short so that a Hub left without subscribers
// while it waits ends its goroutine soon.
const (
	minRedial = 10 * time.Millisecond
	maxRedial = 500 * time.Millisecond
	// dialTimeout bounds one attempt to open a connection and subscribe.
	dialTimeout = 5 * time.Second
)

// A Hub implements the Subscribe method of
// [github.com/locksmith-go/locksmith/driver.Notifier] over one pub/sub
// connection that it shares among any number of subscribers to any number
// of channels, as Notifier asks: an adapter keeps one Hub per Conn and its
// Subscribe method calls [Hub.Subscribe].
//
// The connection and the goroutine that reads from it exist only while
// some channel has a subscriber: the Hub opens the connection for the
// first subscription and closes it after the last one ends. When a
// connection on which the server had confirmed a subscription fails, the
// Hub opens another at once and subscribes again to every channel. While
// it cannot, or while each new connection fails before the server has
// confirmed a subscription on it (as through a proxy that accepts
// connections for a server that is down and closes them), it tries again
// after delays that double from 10ms up to 500ms. A connection whose
// server answers that second subscription with an error reply
// ([Hub.Refused]), as one still starting or one whose ACL no longer
// allows a channel does, counts as failed too: the server may not have
// subscribed, so the Hub closes the connection and opens another after
// the next delay. Messages published in between are lost, which
// driver.Notifier allows.
//
// Make a Hub with [NewHub]. Its methods may be called concurrently.
type Hub struct {
	dial func(ctx context.Context) (Conn, error)

	// writeMu serializes the commands sent on the connection.
	writeMu sync.Mutex

	// mu guards the fields below. Message holds it for reading while it
	// calls subscribers, so that a cancel, which takes it for writing,
	// returns only when no delivery to its subscriber is under way.
	mu       sync.RWMutex
	channels map[string]*channel
	conn     Conn               // nil while not connected
	stop     context.CancelFunc // ends conn's Receive
	running  bool               // the connection's goroutine is running
	ended    chan struct{}      // closed when that goroutine returns
	// again holds the channels that connect subscribed to again on conn,
	// having been confirmed on an earlier connection, until conn confirms
	// them; redial is set when an error reply came while some were
	// unconfirmed, and makes run replace conn (see Hub).
	again  map[string]struct{}
	redial bool
	// confirmedOn is set when conn confirmed a subscription; run opens
	// the next connection at once only after one that had.
	confirmedOn bool

	// afterLastLeft, when set by a test, runs in remove after the last
	// subscriber of a channel left and the Hub released mu, before it
	// sends UNSUBSCRIBE.
	afterLastLeft func(channel string)
	// beforeSend, when set by a test, runs in Subscribe after the
	// subscriber joined its channel, before Subscribe takes writeMu to
	// send SUBSCRIBE.
	beforeSend func(channel string)
	// pause, when set by a test, replaces time.Sleep for the delays
	// before a new connection.
	pause func(time.Duration)
}

type channel struct {
	subscribers map[*subscriber]struct{}
	confirmed   chan struct{} // closed when the server confirmed or refused it
	refused     error         // the server's refusal, set before confirmed is closed
}

type subscriber struct {
	deliver func(payload string)
}

// NewHub returns a Hub that opens its connections with dial. dial may
// connect at once or leave that to the first Subscribe of the Conn it
// returns; its ctx, which ends after 5s, bounds both. The Hub calls dial
// from its own goroutine, never concurrently with itself.
func NewHub(dial func(ctx context.Context) (Conn, error)) *Hub {
	return &Hub{dial: dial, channels: make(map[string]*channel)}
}

// Errors of Subscribe for a Hub not made by NewHub with a dial function,
// and for a nil deliver.
var (
	errNoDial    = errors.New("pubsub: Subscribe on a Hub without a dial function; make it with NewHub")
	errNoDeliver = errors.New("pubsub: Subscribe with a nil deliver function")
)

// Subscribe implements the Subscribe method of
// [github.com/locksmith-go/locksmith/driver.Notifier] over the Hub's shared
// connection, as that method documents: it returns once the server has
// confirmed the subscription; with an error that matches ctx.Err() when ctx
// ends first; or with the error of a SUBSCRIBE that failed or that the
// server refused ([Hub.Refused]). deliver runs on the goroutine that calls
// [Hub.Message].
func (h *Hub) Subscribe(ctx context.Context, name string, deliver func(payload string)) (cancel func(), err error) {
	if h == nil || h.dial == nil {
		return nil, errNoDial
	}
	if deliver == nil {
		return nil, errNoDeliver
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{deliver: deliver}
	h.mu.Lock()
	ch, ok := h.channels[name]
	fresh := !ok
	if fresh {
		ch = &channel{subscribers: make(map[*subscriber]struct{}), confirmed: make(chan struct{})}
		h.channels[name] = ch
	}
	ch.subscribers[sub] = struct{}{}
	if !h.running {
		h.running = true
		h.ended = make(chan struct{})
		go h.run(h.ended)
	}
	h.mu.Unlock()

	cancel = sync.OnceFunc(func() { h.remove(name, sub) })
	if h.beforeSend != nil {
		h.beforeSend(name)
	}
	// Without a connection yet, run subscribes to every channel once it
	// has one. conn is read under writeMu: run clears h.conn before it
	// takes writeMu to close a connection, so conn is never a closed one.
	if fresh {
		h.writeMu.Lock()
		h.mu.RLock()
		conn := h.conn
		h.mu.RUnlock()
		var err error
		if conn != nil {
			err = conn.Subscribe(ctx, name)
		}
		h.writeMu.Unlock()
		if err != nil {
			cancel()
			return nil, contextErr(ctx, err)
		}
	}
	select {
	case <-ch.confirmed:
		h.mu.RLock()
		err := ch.refused
		h.mu.RUnlock()
		if err != nil {
			cancel()
			return nil, err
		}
		return cancel, nil
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// Wait implements [github.com/locksmith-go/locksmith/driver.Waiter]: it
// blocks until the Hub's goroutine has ended and closed its connection,
// which happens soon after the last subscription is cancelled, and returns
// nil; or it returns ctx.Err() when ctx ends first. Subscriptions made
// while Wait runs are waited for too.
func (h *Hub) Wait(ctx context.Context) error {
	if h == nil {
		return nil
	}
	var waited chan struct{}
	for {
		h.mu.Lock()
		ended := h.ended
		h.mu.Unlock()
		if ended == waited {
			return nil // nil: the Hub never ran
		}
		select {
		case <-ended:
			waited = ended
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// contextErr returns err, made to match ctx.Err() when ctx ended: a client
// may report the end of ctx as an error of its own.
func contextErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return err
}

// remove ends one subscription, unsubscribing from its channel when it was
// the last one there and ending the connection when no channel is left.
//
// The channel is dropped and UNSUBSCRIBE sent in one step under writeMu.
// Subscribe sends SUBSCRIBE, under writeMu too, only for a channel it did
// not find, so a Subscribe of the same channel either joins the channel
// before it is dropped (and remove then keeps it) or sends its SUBSCRIBE
// after the UNSUBSCRIBE: the server never ends unsubscribed from a channel
// that has a subscriber.
func (h *Hub) remove(name string, sub *subscriber) {
	h.mu.Lock()
	ch := h.channels[name]
	delete(ch.subscribers, sub)
	last := len(ch.subscribers) == 0
	h.mu.Unlock()
	if !last {
		return
	}
	if h.afterLastLeft != nil {
		h.afterLastLeft(name)
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.mu.Lock()
	if h.channels[name] != ch || len(ch.subscribers) > 0 {
		// Someone subscribed again meanwhile and shares the server's
		// subscription.
		h.mu.Unlock()
		return
	}
	delete(h.channels, name)
	conn, stop := h.conn, h.stop
	if len(h.channels) == 0 && stop != nil {
		// run sees no channel left and ends after closing conn.
		h.conn, h.stop = nil, nil
		conn = nil
	}
	h.mu.Unlock()
	switch {
	case stop != nil && conn == nil:
		stop()
	case conn != nil:
		// A failure here leaves the server sending messages that no
		// one receives: Message drops them.
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		conn.Unsubscribe(ctx, name)
	}
}

// Message hands a message published on channel name to its subscribers.
// A Conn's Receive calls it for every message it reads; a message on a
// channel without subscribers is dropped. It returns once every
// subscriber's deliver has returned.
func (h *Hub) Message(name, payload string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if ch, ok := h.channels[name]; ok {
		for sub := range ch.subscribers {
			sub.deliver(payload)
		}
	}
}

// Confirmed records the server's confirmation of the subscription to
// channel name, which ends the wait of the Subscribe calls for it. A
// Conn's Receive calls it for every confirmation it reads (a
// "subscribe" message); calling it again for the same channel does
// nothing.
func (h *Hub) Confirmed(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.again, name)
	h.confirmedOn = true
	if ch, ok := h.channels[name]; ok {
		select {
		case <-ch.confirmed:
		default:
			close(ch.confirmed)
		}
	}
}

// Refused records an error reply on the connection, such as an ACL's
// NOPERM, which a Conn's Receive reads in place of a confirmation: the
// connection itself is fine. Such a reply names no channel, so every
// subscription still waiting for its confirmation fails with err, at once
// rather than at the end of its ctx. Subscriptions already confirmed go
// on, except when the Hub has subscribed to some of them again on a new
// connection that has not confirmed them yet: the reply may be the
// refusal of those, so the Hub ends the connection and opens another
// after a delay (see Hub).
func (h *Hub) Refused(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.again) > 0 {
		h.redial = true
		if h.stop != nil {
			h.stop()
		}
	}
	for _, ch := range h.channels {
		select {
		case <-ch.confirmed:
		default:
			ch.refused = err
			close(ch.confirmed)
		}
	}
}

// run keeps a connection open and subscribed while some channel has a
// subscriber, and returns when none has.
func (h *Hub) run(ended chan struct{}) {
	defer close(ended)
	delay := minRedial
	for {
		conn, err := h.connect()
		if conn == nil && err == nil {
			return // no subscriber left
		}
		if err == nil {
			ctx, stop := context.WithCancel(context.Background())
			h.mu.Lock()
			h.stop = stop
			if len(h.channels) == 0 || h.redial {
				stop()
			}
			h.mu.Unlock()
			received := make(chan struct{})
			var heartbeat sync.WaitGroup
			if p, ok := conn.(Pinger); ok {
				heartbeat.Go(func() { h.heartbeat(ctx, p, received) })
			}
			conn.Receive(ctx, h)
			close(received)
			stop()
			heartbeat.Wait()
			// Only this goroutine sets h.conn, so it is conn or, after the
			// last subscriber left, nil. (Comparing it with conn would panic
			// for a Conn whose dynamic type is not comparable.)
			h.mu.Lock()
			h.conn, h.stop = nil, nil
			worked := h.confirmedOn && !h.redial
			idle := len(h.channels) == 0
			h.again, h.redial, h.confirmedOn = nil, false, false
			h.mu.Unlock()
			// A Subscribe or Unsubscribe that took conn before it
			// was cleared may still be writing to it.
			h.writeMu.Lock()
			conn.Close()
			h.writeMu.Unlock()
			if worked {
				delay = minRedial
			}
			if worked || idle {
				continue
			}
		}
		if h.pause != nil {
			h.pause(delay)
		} else {
			time.Sleep(delay)
		}
		delay = min(2*delay, maxRedial)
	}
}

// heartbeat pings p every PingInterval until received is closed, and once
// more when ctx ends first (see Pinger).
func (h *Hub) heartbeat(ctx context.Context, p Pinger, received <-chan struct{}) {
	ticker := time.NewTicker(PingInterval)
	defer ticker.Stop()
	for {
		select {
		case <-received:
			return
		case <-ticker.C:
			h.ping(p)
		case <-ctx.Done():
			h.ping(p)
			return
		}
	}
}

func (h *Hub) ping(p Pinger) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	p.Ping(ctx)
}

// connect opens a connection and subscribes it to every channel that has
// a subscriber. It returns nil and no error when there is none, after
// marking the Hub as not running.
func (h *Hub) connect() (Conn, error) {
	h.mu.Lock()
	if len(h.channels) == 0 {
		h.running = false
		h.mu.Unlock()
		return nil, nil
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn, err := h.dial(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	names := make([]string, 0, len(h.channels))
	h.again, h.redial, h.confirmedOn = nil, false, false
	for name, ch := range h.channels {
		names = append(names, name)
		select {
		case <-ch.confirmed:
			if h.again == nil {
				h.again = make(map[string]struct{})
			}
			h.again[name] = struct{}{}
		default:
		}
	}
	h.conn = conn
	h.mu.Unlock()
	if len(names) > 0 {
		h.writeMu.Lock()
		err = conn.Subscribe(ctx, names...)
		h.writeMu.Unlock()
	}
	if err != nil {
		h.Refused(err)
		h.mu.Lock()
		h.conn = nil
		h.again, h.redial = nil, false
		h.mu.Unlock()
		h.writeMu.Lock()
		conn.Close()
		h.writeMu.Unlock()
		return nil, err
	}
	return conn, nil
}
