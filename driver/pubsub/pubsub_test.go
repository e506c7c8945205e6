package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/driver/pubsub"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// safetyNet bounds waits that would hang on a bug; passing runs never come
// near it.
const safetyNet = time.Minute

// When its connection breaks, a Hub opens another and subscribes again, so
// messages published after the server is back reach the subscriber; ending
// the subscription then ends the Hub's goroutine (goleak in TestMain).
func TestHubResubscribesAfterConnectionLoss(t *testing.T) {
	s := miniredis.RunT(t)
	n := resp.DialNotifier(s.Addr())
	defer n.Close()
	got := make(chan string, 100)
	cancel, err := n.Subscribe(context.Background(), "ch", func(p string) { got <- p })
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer cancel()

	s.Publish("ch", "before")
	if p := await(t, got); p != "before" {
		t.Fatalf("got %q, want before", p)
	}

	s.Close() // drops every connection
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	// Publish until the Hub has subscribed again: messages published
	// while it reconnects are lost, as driver.Notifier allows.
	deadline := time.Now().Add(safetyNet)
	for s.PubSubNumSub("ch")["ch"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no subscriber on ch %v after the restart", safetyNet)
		}
		time.Sleep(time.Millisecond)
	}
	s.Publish("ch", "after")
	if p := await(t, got); p != "after" {
		t.Fatalf("got %q, want after", p)
	}
}

func await(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case p := <-got:
		return p
	case <-time.After(safetyNet):
		t.Fatalf("no message within %v", safetyNet)
		return ""
	}
}

// A Hub whose first connection breaks opens a second one, even when its
// PubSub values are of a type that cannot be compared (phasedPubSub).
func TestHubReconnectsWithUncomparableConnections(t *testing.T) {
	if n := phasedHub(t, nil, holds, delivers); n != 2 {
		t.Errorf("the Hub opened %d connections, want 2", n)
	}
}

// serverPubSub is a PubSub over a stand-in server that records which
// channels the connection is subscribed to.
type serverPubSub struct {
	hub  *pubsub.Hub
	mu   *sync.Mutex
	subs map[string]bool
}

func (p serverPubSub) Subscribe(_ context.Context, channels ...string) error {
	p.mu.Lock()
	for _, ch := range channels {
		p.subs[ch] = true
	}
	p.mu.Unlock()
	for _, ch := range channels {
		p.hub.Confirmed(ch)
	}
	return nil
}

func (p serverPubSub) Unsubscribe(_ context.Context, channels ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range channels {
		delete(p.subs, ch)
	}
	return nil
}

func (p serverPubSub) Receive(ctx context.Context, _ *pubsub.Hub) error {
	<-ctx.Done()
	return nil
}

func (p serverPubSub) Close() {}

func (p serverPubSub) subscribed(ch string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subs[ch]
}

// A Subscribe that comes while the cancel of a channel's last subscriber is
// between its bookkeeping and its UNSUBSCRIBE leaves the server subscribed:
// the UNSUBSCRIBE must not overtake the new subscription's SUBSCRIBE.
func TestHubSubscribeDuringLastCancel(t *testing.T) {
	var hub *pubsub.Hub
	server := serverPubSub{mu: new(sync.Mutex), subs: make(map[string]bool)}
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		server.hub = hub
		return server, nil
	})
	// A subscriber on another channel keeps the connection open.
	keep, err := hub.Subscribe(context.Background(), "other", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe(other): %v", err)
	}
	defer keep()
	first, err := hub.Subscribe(context.Background(), "ch", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe(ch): %v", err)
	}

	var second func()
	pubsub.SetAfterLastLeft(hub, func(channel string) {
		if channel != "ch" || second != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		var err error
		second, err = hub.Subscribe(ctx, "ch", func(string) {})
		if err != nil {
			t.Errorf("second Subscribe(ch): %v", err)
		}
	})
	first()
	if second == nil {
		t.Fatal("the hook did not subscribe again")
	}
	defer second()
	if !server.subscribed("ch") {
		t.Error("the server is not subscribed to ch, though the second subscription returned and is not cancelled")
	}
}

// Subscribe on a Hub that cannot open a connection, or with nothing to
// deliver to, returns an error rather than failing later in the Hub's
// goroutine.
func TestHubSubscribeRejectsBadInput(t *testing.T) {
	dial := func(context.Context) (pubsub.Conn, error) {
		t.Error("dial called for a subscription that should have been rejected")
		return nil, errors.New("not dialled")
	}
	deliver := func(string) {}
	tests := []struct {
		name    string
		hub     *pubsub.Hub
		deliver func(string)
	}{
		{"nil Hub", nil, deliver},
		{"zero Hub", new(pubsub.Hub), deliver},
		{"NewHub(nil)", pubsub.NewHub(nil), deliver},
		{"nil deliver", pubsub.NewHub(dial), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cancel, err := tt.hub.Subscribe(context.Background(), "ch", tt.deliver)
			if err == nil || cancel != nil {
				t.Errorf("Subscribe = cancel %v, error %v; want no cancel and an error", cancel != nil, err)
			}
		})
	}
}

// An error reply to a new subscription on a connection whose other
// subscriptions are confirmed fails that Subscribe only: the connection
// stays, and so do the subscriptions on it.
func TestHubKeepsItsConnectionWhenANewSubscriptionIsRefused(t *testing.T) {
	var hub *pubsub.Hub
	var dials atomic.Int32
	refuse := make(chan struct{}, 1)
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		dials.Add(1)
		return refusalOnDemand{hub: hub, refuse: refuse}, nil
	})
	got := make(chan string, 10)
	keep, err := hub.Subscribe(context.Background(), "ch", func(p string) { got <- p })
	if err != nil {
		t.Fatalf("Subscribe(ch): %v", err)
	}
	defer keep()
	refuse <- struct{}{}
	if _, err := hub.Subscribe(context.Background(), "denied", func(string) {}); err == nil {
		t.Fatal("Subscribe(denied) succeeded, want the server's refusal")
	}
	hub.Message("ch", "still")
	if p := await(t, got); p != "still" {
		t.Fatalf("got %q, want still", p)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the Hub opened %d connections, want 1", n)
	}
}

// refusalOnDemand is a PubSub whose server confirms every subscription,
// except that it answers the next SUBSCRIBE with an error reply after a
// value arrives on refuse.
type refusalOnDemand struct {
	hub    *pubsub.Hub
	refuse chan struct{}
}

func (p refusalOnDemand) Subscribe(_ context.Context, channels ...string) error {
	select {
	case <-p.refuse:
		p.hub.Refused(errors.New("NOPERM this user has no permissions to access one of the channels"))
	default:
		for _, ch := range channels {
			p.hub.Confirmed(ch)
		}
	}
	return nil
}

func (p refusalOnDemand) Unsubscribe(context.Context, ...string) error { return nil }

func (p refusalOnDemand) Receive(ctx context.Context, _ *pubsub.Hub) error {
	<-ctx.Done()
	return nil
}

func (p refusalOnDemand) Close() {}

// A phase is how the server treats one connection of a phasedPubSub.
type phase int

const (
	holds    phase = iota // confirms, then breaks when drop is closed
	refuses               // answers the SUBSCRIBE with an error reply
	closes                // closes the connection before confirming
	delivers              // confirms and publishes "after" on ch
)

// phasedPubSub is one connection of a Hub whose server treats each new
// connection as the next phase of its script says. Its dynamic type
// cannot be compared, as a struct holding a func cannot: a Hub must never
// compare connections.
type phasedPubSub struct {
	hub   *pubsub.Hub
	phase phase
	drop  <-chan struct{}
	_     [0]func() // makes the type uncomparable
}

func (p phasedPubSub) Subscribe(_ context.Context, channels ...string) error {
	if p.phase == holds || p.phase == delivers {
		for _, ch := range channels {
			p.hub.Confirmed(ch)
		}
	}
	return nil
}

func (p phasedPubSub) Unsubscribe(context.Context, ...string) error { return nil }

func (p phasedPubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	switch p.phase {
	case holds:
		select {
		case <-p.drop:
			return errors.New("connection reset")
		case <-ctx.Done():
			return nil
		}
	case refuses:
		hub.Refused(errors.New("ERR unknown command 'SUBSCRIBE'"))
	case closes:
		return errors.New("EOF")
	case delivers:
		hub.Message("ch", "after")
	}
	<-ctx.Done()
	return nil
}

func (p phasedPubSub) Close() {}

// phasedHub returns a Hub whose n-th connection goes through script[n-1],
// and the last phase for every connection after those. It subscribes to
// ch, breaks the first connection, and fails t unless "after" arrives; it
// returns how many connections the Hub opened by then.
func phasedHub(t *testing.T, configure func(*pubsub.Hub), script ...phase) int32 {
	t.Helper()
	var hub *pubsub.Hub
	var dials atomic.Int32
	drop := make(chan struct{})
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		n := int(dials.Add(1))
		return phasedPubSub{hub: hub, phase: script[min(n, len(script))-1], drop: drop}, nil
	})
	if configure != nil {
		configure(hub)
	}
	got := make(chan string, 10)
	cancel, err := hub.Subscribe(context.Background(), "ch", func(p string) { got <- p })
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer cancel()
	close(drop)
	if p := await(t, got); p != "after" {
		t.Fatalf("got %q, want after", p)
	}
	return dials.Load()
}

// A Hub whose subscription made again on a new connection is refused with
// an error reply does not leave that connection unsubscribed: it opens
// another and subscribes there, so messages reach the subscriber again.
func TestHubRedialsWhenASubscriptionMadeAgainIsRefused(t *testing.T) {
	if n := phasedHub(t, nil, holds, refuses, delivers); n != 3 {
		t.Errorf("the Hub opened %d connections, want 3", n)
	}
}

// A Hub whose new connections keep failing before the server confirms a
// subscription, as through a proxy that accepts connections for a server
// that is down and closes them, waits between them with delays that
// double, rather than dialling again at once in a loop; it redials at
// once only after a connection that had worked.
func TestHubWaitsBetweenConnectionsThatFailBeforeAConfirmation(t *testing.T) {
	var mu sync.Mutex
	var pauses []time.Duration
	record := func(h *pubsub.Hub) {
		pubsub.SetPause(h, func(d time.Duration) {
			mu.Lock()
			pauses = append(pauses, d)
			mu.Unlock()
		})
	}
	if n := phasedHub(t, record, holds, closes, closes, closes, delivers); n != 5 {
		t.Errorf("the Hub opened %d connections, want 5", n)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	if !slices.Equal(pauses, want) {
		t.Errorf("pauses before new connections = %v, want %v", pauses, want)
	}
}

// closeRecorder is a Conn whose server confirms every subscription and
// which records that the Hub closed it.
type closeRecorder struct {
	hub    **pubsub.Hub
	closed *atomic.Bool
}

func (p closeRecorder) Subscribe(_ context.Context, channels ...string) error {
	for _, ch := range channels {
		(*p.hub).Confirmed(ch)
	}
	return nil
}

func (p closeRecorder) Unsubscribe(context.Context, ...string) error { return nil }

func (p closeRecorder) Receive(ctx context.Context, _ *pubsub.Hub) error {
	<-ctx.Done()
	return nil
}

func (p closeRecorder) Close() { p.closed.Store(true) }

// Wait returns at once for a Hub that never ran, waits while a
// subscription lasts, and returns once the last cancel ended the Hub's
// goroutine, which has closed its connection by then.
func TestHubWait(t *testing.T) {
	var hub *pubsub.Hub
	var closed atomic.Bool
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		return closeRecorder{hub: &hub, closed: &closed}, nil
	})
	if err := hub.Wait(t.Context()); err != nil {
		t.Fatalf("Wait before any Subscribe = %v, want nil", err)
	}
	cancel, err := hub.Subscribe(t.Context(), "ch", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	short, stop := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer stop()
	if err := hub.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait while subscribed = %v, want %v", err, context.DeadlineExceeded)
	}
	cancel()
	ctx, stop := context.WithTimeout(t.Context(), safetyNet)
	defer stop()
	if err := hub.Wait(ctx); err != nil {
		t.Fatalf("Wait after the last cancel = %v, want nil", err)
	}
	if !closed.Load() {
		t.Error("Wait returned before the Hub closed its connection")
	}
}

// pingRecorder is a Pinger whose Receive, like one that reads with a
// timeout of its own, returns after its ctx ended only once a PING has
// woken it; it signals seen for each PING it takes before. Ping does not
// wait: pings has room for the PINGs of a test, which Receive takes as
// they come, and for one that the Hub may send after Receive returned.
type pingRecorder struct {
	hub   **pubsub.Hub
	pings chan struct{}
	seen  chan struct{}
}

func (p pingRecorder) Subscribe(_ context.Context, channels ...string) error {
	for _, ch := range channels {
		(*p.hub).Confirmed(ch)
	}
	return nil
}

func (p pingRecorder) Unsubscribe(context.Context, ...string) error { return nil }

func (p pingRecorder) Ping(context.Context) error {
	p.pings <- struct{}{}
	return nil
}

func (p pingRecorder) Receive(ctx context.Context, _ *pubsub.Hub) error {
	for range p.pings {
		if ctx.Err() != nil {
			return nil
		}
		select {
		case p.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

func (p pingRecorder) Close() {}

// A Hub pings the connection of a Pinger while it is subscribed, and once
// more when the last subscription ends, which wakes its Receive: without
// that PING, Receive and Wait would not return.
func TestHubPingsAPinger(t *testing.T) {
	var hub *pubsub.Hub
	seen := make(chan struct{}, 1)
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		return pingRecorder{hub: &hub, pings: make(chan struct{}, 16), seen: seen}, nil
	})
	cancel, err := hub.Subscribe(t.Context(), "ch", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	select {
	case <-seen:
	case <-time.After(safetyNet):
		t.Fatalf("no PING within %v of Subscribe", safetyNet)
	}
	cancel()
	ctx, stop := context.WithTimeout(t.Context(), safetyNet)
	defer stop()
	if err := hub.Wait(ctx); err != nil {
		t.Fatalf("Wait after the last cancel = %v; want nil, a last PING having woken Receive", err)
	}
}

// lateWriteRecorder is a Conn whose server confirms every subscription and
// which records a SUBSCRIBE sent on it after the Hub closed it. Its Receive
// fails when drop is closed; closed is closed by Close.
type lateWriteRecorder struct {
	hub    **pubsub.Hub
	drop   <-chan struct{}
	closed chan struct{}
	late   *atomic.Bool
}

func (p lateWriteRecorder) Subscribe(_ context.Context, channels ...string) error {
	select {
	case <-p.closed:
		p.late.Store(true)
		return errors.New("use of closed network connection")
	default:
	}
	for _, ch := range channels {
		(*p.hub).Confirmed(ch)
	}
	return nil
}

func (p lateWriteRecorder) Unsubscribe(context.Context, ...string) error { return nil }

func (p lateWriteRecorder) Receive(ctx context.Context, _ *pubsub.Hub) error {
	select {
	case <-p.drop:
		return errors.New("connection reset")
	case <-ctx.Done():
		return nil
	}
}

func (p lateWriteRecorder) Close() { close(p.closed) }

// A Subscribe that finds the connection open but comes to send its
// SUBSCRIBE after the connection failed and the Hub closed it sends
// nothing on the closed connection (the Hub calls Close last) and does not
// fail: the Hub's next connection subscribes to its channel.
func TestHubSubscribeDoesNotWriteToAClosedConnection(t *testing.T) {
	var hub *pubsub.Hub
	var dials atomic.Int32
	var late atomic.Bool
	drop := make(chan struct{})
	firstClosed := make(chan struct{})
	hub = pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		if dials.Add(1) == 1 {
			return lateWriteRecorder{hub: &hub, drop: drop, closed: firstClosed, late: &late}, nil
		}
		return lateWriteRecorder{hub: &hub, closed: make(chan struct{}), late: &late}, nil
	})
	keep, err := hub.Subscribe(t.Context(), "a", func(string) {})
	if err != nil {
		t.Fatalf("Subscribe(a): %v", err)
	}
	pubsub.SetBeforeSend(hub, func(channel string) {
		if channel != "b" {
			return
		}
		close(drop)
		select {
		case <-firstClosed:
		case <-time.After(safetyNet):
			t.Errorf("the Hub did not close its broken connection within %v", safetyNet)
		}
	})
	ctx, stop := context.WithTimeout(t.Context(), safetyNet)
	defer stop()
	cancel, err := hub.Subscribe(ctx, "b", func(string) {})
	if err != nil {
		t.Errorf("Subscribe(b) during the reconnection: %v", err)
	} else {
		cancel()
	}
	if late.Load() {
		t.Error("the Hub sent SUBSCRIBE on a connection after closing it")
	}
	keep()
	if err := hub.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// Hooked sends SUBSCRIBE and UNSUBSCRIBE through Send, its Receive returns
// what Ended receives, or nil once its ctx ends, and Close calls Release.
func TestHooked(t *testing.T) {
	var sent []string
	ended := make(chan error, 1)
	released := false
	h := pubsub.Hooked{
		Send: func(_ context.Context, subscribe bool, channels []string) error {
			sent = append(sent, fmt.Sprint(subscribe, channels))
			return nil
		},
		Ended:   ended,
		Release: func() { released = true },
	}
	h.Subscribe(t.Context(), "a", "b")
	h.Unsubscribe(t.Context(), "a")
	if want := []string{"true [a b]", "false [a]"}; !slices.Equal(sent, want) {
		t.Errorf("Send got %q, want %q", sent, want)
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := h.Receive(done, nil); err != nil {
		t.Errorf("Receive with its ctx ended = %v, want nil", err)
	}
	broken := errors.New("connection broken")
	ended <- broken
	if err := h.Receive(t.Context(), nil); err != broken {
		t.Errorf("Receive once the connection ended = %v, want %v", err, broken)
	}
	if h.Close(); !released {
		t.Error("Close did not call Release")
	}
}
