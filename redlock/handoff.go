package redlock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// WithReleaseNotifications sets whether a Lock call waiting between
// attempts listens for the release of the keys it wants, so that it tries
// again as soon as they are released instead of at the end of its retry
// delay. Listening needs nodes whose Conns implement [driver.Notifier]; with
// fewer than a majority of those the Client only polls, as it does with
// notifications off. Default: on.
//
// Turn them off where the nodes' users may not SUBSCRIBE (a Conn refused
// by the server falls back to polling anyway, after one failed
// subscription per key), or to keep the one extra connection per node
// that a waiting Client holds.
//
// The release script publishes on the channel "{key}:released", or key +
// ":released" when the key has a hash tag. Notifications only shorten
// waits: a lost one leaves the waiter to its retry delays.
func WithReleaseNotifications(on bool) Option {
	return optionFunc(func(c *config) { c.notifications = on })
}

// releaseWaits is a Client's record of the Lock calls that wait for keys
// to be released. For each key that someone waits for, the Client
// subscribes once on every node to the key's release channel, and keeps the
// waiters in a FIFO queue. A release heard from a majority of the nodes
// wakes only the queue's head, so one release costs one attempt, not one
// per waiter; the others keep polling at their retry delays, and each moves
// up as the waiters before it acquire the lock or give up, so none waits
// behind the others for ever.
type releaseWaits struct {
	once      sync.Once
	notifiers []driver.Notifier // see Client.notifiers

	mu   sync.Mutex
	keys map[string]*keyWaits
}

// keyWaits is the queue of one key.
type keyWaits struct {
	queue []*waiter
	// heard holds each recent release, told apart by the tag the Release
	// script publishes.
	heard   map[string]*release
	cancels []func() // the subscriptions on the nodes
	left    bool     // the queue emptied: the subscriptions ended
}

// release is what a Client heard of one release of a key.
type release struct {
	nodes []bool // the nodes that announced it
	// woke is the waiter that a majority's announcements woke, nil
	// before that or when no one waited. Each node that announces the
	// release after that wakes it again while it waits, since its
	// attempt may have been refused on a node that still held the key
	// then, or that it skipped or failed on.
	woke *waiter
}

// maxReleasesHeard bounds keyWaits.heard. Releases that a majority never
// announces (those of a minority, or of an owner whose release reached
// few nodes) would otherwise pile up; forgetting them only delays a
// wake-up to the waiter's next poll.
const maxReleasesHeard = 16

// waiter is one Lock call waiting between attempts.
type waiter struct {
	client *Client
	keys   []string  // the queues it is in; nil until it joins them
	wake   chan bool // holds a wake-up for the call, if any
	timer  *time.Timer
}

// notifiers returns the nodes' Notifiers, indexed like c.nodes with nil for
// a Conn that has none, or nil when fewer than a majority can notify:
// without a majority's announcements no release could ever be heard.
func (c *Client) notifiers() []driver.Notifier {
	c.waits.once.Do(func() {
		if !c.cfg.notifications {
			return
		}
		ns := make([]driver.Notifier, len(c.nodes))
		count := 0
		for i, n := range c.nodes {
			if notifier, ok := n.Conn().(driver.Notifier); ok {
				ns[i] = notifier
				count++
			}
		}
		if count >= quorum.Size(len(c.nodes)) {
			c.waits.notifiers = ns
		}
	})
	return c.waits.notifiers
}

// wait pauses a Lock call for delay, or less when a release of one of its
// keys is heard first. It returns ctx.Err() when ctx ended first, and
// ErrClosed when the Client was closed.
//
// On its first wait the call joins the queues of its keys, subscribing on
// the nodes for a key no one waited for before. A call that has just set up
// those subscriptions does not wait at all: a release between its refused
// attempt and its subscription would have gone unheard. A wait that ends
// once the Client is closed returns ErrClosed however it ended, so that no
// attempt starts after Close.
func (w *waiter) wait(ctx context.Context, req request, delay time.Duration) error {
	if w.keys == nil && w.client.notifiers() != nil {
		if w.join(ctx, req) {
			return w.ended(ctx)
		}
	}
	if w.timer == nil {
		w.timer = time.NewTimer(delay)
	} else {
		w.timer.Reset(delay)
	}
	defer w.timer.Stop()
	select {
	case <-w.timer.C:
	case <-w.wake:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.client.closed:
		return ErrClosed
	}
	return w.ended(ctx)
}

// ended returns ErrClosed once the Client is closed, else ctx.Err().
func (w *waiter) ended(ctx context.Context) error {
	select {
	case <-w.client.closed:
		return ErrClosed
	default:
		return ctx.Err()
	}
}

// join puts w at the end of the queues of req's keys and reports whether
// it subscribed to any of them itself.
func (w *waiter) join(ctx context.Context, req request) (subscribed bool) {
	c := w.client
	w.keys = req.keys
	w.wake = make(chan bool, 1)
	var fresh []*keyWaits
	var freshKeys []string
	c.waits.mu.Lock()
	if c.waits.keys == nil {
		c.waits.keys = make(map[string]*keyWaits)
	}
	for _, key := range req.keys {
		kw, ok := c.waits.keys[key]
		if !ok {
			kw = &keyWaits{heard: make(map[string]*release)}
			c.waits.keys[key] = kw
			fresh = append(fresh, kw)
			freshKeys = append(freshKeys, key)
		}
		kw.queue = append(kw.queue, w)
	}
	c.waits.mu.Unlock()
	// One subscription round per key, all at once: a node that does not
	// answer costs one node timeout, not one per key of a semaphore.
	var wg sync.WaitGroup
	for i, kw := range fresh {
		wg.Go(func() { c.subscribe(ctx, req, freshKeys[i], kw) })
	}
	wg.Wait()
	return len(fresh) > 0
}

// subscribe listens for releases of key, whose queue is kw, on every node
// that can notify. A node that fails to subscribe is only polled. The
// subscriptions last while kw's queue is not empty; the caller is in it.
// One that the node confirms after the round returned is kept too, or
// cancelled at once if the queue emptied meanwhile.
func (c *Client) subscribe(ctx context.Context, req request, key string, kw *keyWaits) {
	c.subscribeAll(ctx, req.nodeTimeout, scripts.ReleaseChannel(key),
		func(node int, tag string) { c.heard(kw, node, tag) },
		func(cancel func()) bool {
			c.waits.mu.Lock()
			defer c.waits.mu.Unlock()
			if kw.left {
				return false
			}
			kw.cancels = append(kw.cancels, cancel)
			return true
		})
}

// subscribeAll subscribes to channel on every node that can notify, each
// bounded by timeout, and returns once they answered or timed out. deliver
// gets each message with its node. keep is given the cancel function of
// each subscription a node confirmed, also after subscribeAll returned,
// and reports whether it keeps it; one it does not keep is cancelled at
// once.
func (c *Client) subscribeAll(ctx context.Context, timeout time.Duration, channel string, deliver func(node int, payload string), keep func(cancel func()) bool) {
	notifiers := c.notifiers()
	round := quorum.Round{
		Nodes:   len(notifiers),
		Timeout: timeout,
		Tracker: &c.requests,
		Inline:  c.inline,
		Call: func(ctx context.Context, i int) quorum.Reply {
			if notifiers[i] == nil {
				return quorum.Reply{}
			}
			cancel, err := notifiers[i].Subscribe(ctx, channel, func(payload string) { deliver(i, payload) })
			if err == nil && !keep(cancel) {
				cancel()
			}
			return quorum.Reply{Err: err}
		},
	}
	round.Run(ctx)
}

// heard records that node announced the release tagged tag of the key of
// kw, and wakes the queue's head once a majority of the nodes has announced
// it: before that, the key may still be held on enough nodes to refuse the
// head's attempt. Each node that announces the release after that wakes
// the same waiter again, if it is still in the queue: its attempt may have
// been refused on a node that had not released the key yet, or on one
// that it skipped as behind or that failed it, and without a new wake-up
// it would wait for its whole retry delay, although the lock may now be
// free. A waiter that got the lock drops such a wake-up (see leave); one
// that did not tries again at once. Repeated announcements from one node
// wake no one.
func (c *Client) heard(kw *keyWaits, node int, tag string) {
	c.waits.mu.Lock()
	defer c.waits.mu.Unlock()
	r, seen := kw.heard[tag]
	if !seen {
		if len(kw.heard) >= maxReleasesHeard {
			clear(kw.heard)
		}
		r = &release{nodes: make([]bool, len(c.nodes))}
		kw.heard[tag] = r
	}
	if r.nodes[node] {
		return
	}
	r.nodes[node] = true
	count := 0
	for _, yes := range r.nodes {
		if yes {
			count++
		}
	}
	switch {
	case count < quorum.Size(len(c.nodes)):
	case count == quorum.Size(len(c.nodes)):
		if len(kw.queue) > 0 {
			r.woke = kw.queue[0]
			r.woke.notify()
		}
	case r.woke != nil && slices.Contains(kw.queue, r.woke):
		r.woke.notify()
	}
}

// notify wakes w unless a wake-up is already pending.
func (w *waiter) notify() {
	select {
	case w.wake <- true:
	default:
	}
}

// leave takes w out of its queues when its Lock call returns, having got
// the lock or not; a nil w, a call that never waited, has nothing to
// leave. A wake-up meant for w that it did not use passes to the next in
// line, unless w got the lock: the release it announced is then w's, and
// the next in line would only be refused. The subscriptions of a key no
// one waits for any more end.
func (w *waiter) leave(granted bool) {
	if w == nil || w.keys == nil {
		return
	}
	c := w.client
	var pending bool
	select {
	case <-w.wake:
		pending = !granted
	default:
	}
	var cancels []func()
	c.waits.mu.Lock()
	for _, key := range w.keys {
		kw := c.waits.keys[key]
		for i, other := range kw.queue {
			if other == w {
				kw.queue = append(kw.queue[:i], kw.queue[i+1:]...)
				break
			}
		}
		switch {
		case len(kw.queue) == 0:
			delete(c.waits.keys, key)
			cancels = append(cancels, kw.cancels...)
			kw.left = true
		case pending:
			kw.queue[0].notify()
		}
	}
	c.waits.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
