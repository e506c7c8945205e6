package drivertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// deliveryWait bounds the wait for a published message, so that a
// Notifier that loses every message fails the rule instead of hanging it.
// A passing Notifier delivers in about one round trip.
const deliveryWait = 10 * time.Second

// publishScript publishes ARGV[2] on channel ARGV[1], as locksmith's release
// script does, and returns how many subscribers the server reached. KEYS[1]
// names the channel's hash slot, as the release script's lock key does, so
// that a cluster client runs every publish on one channel on the same node:
// messages published from different nodes of a cluster may arrive in any
// order.
const publishScript = `return redis.call('PUBLISH', ARGV[1], ARGV[2])`

// notifier returns the Conn as a driver.Notifier, skipping the rule when it
// is not one.
func notifier(t *testing.T, newConn func(t *testing.T) driver.Conn) driver.Notifier {
	t.Helper()
	n, ok := newConn(t).(driver.Notifier)
	if !ok {
		t.Skip("the Conn does not implement driver.Notifier")
	}
	return n
}

// newChannel returns a channel name no other test uses, in a hash tag.
func newChannel(name string) string {
	return "{locksmith-drivertest-" + rand.Text() + "}:" + name
}

// inbox collects what one subscription delivers.
type inbox struct {
	mu       sync.Mutex
	payloads []string
	arrived  chan struct{} // receives a token per delivery
}

func newInbox() *inbox { return &inbox{arrived: make(chan struct{}, 64)} }

func (in *inbox) deliver(payload string) {
	in.mu.Lock()
	in.payloads = append(in.payloads, payload)
	in.mu.Unlock()
	select {
	case in.arrived <- struct{}{}:
	default:
	}
}

func (in *inbox) got() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.payloads...)
}

// await waits for n deliveries in all.
func (in *inbox) await(t *testing.T, what string, n int) {
	t.Helper()
	timeout := time.After(deliveryWait)
	for len(in.got()) < n {
		select {
		case <-in.arrived:
		case <-timeout:
			t.Fatalf("%s: %d of %d messages delivered after %v; got %q", what, len(in.got()), n, deliveryWait, in.got())
		}
	}
}

// awaitPayload waits until payload has been delivered.
func (in *inbox) awaitPayload(t *testing.T, what, payload string) {
	t.Helper()
	timeout := time.After(deliveryWait)
	for !slices.Contains(in.got(), payload) {
		select {
		case <-in.arrived:
		case <-timeout:
			t.Fatalf("%s: %q not delivered after %v; got %q", what, payload, deliveryWait, in.got())
		}
	}
}

func subscribe(t *testing.T, n driver.Notifier, channel string, in *inbox) func() {
	t.Helper()
	cancel, err := n.Subscribe(t.Context(), channel, in.deliver)
	if err != nil {
		t.Fatalf("Subscribe(%q) error: %v", channel, err)
	}
	t.Cleanup(cancel)
	return cancel
}

func publish(t *testing.T, conn driver.Conn, channel, payload string) {
	t.Helper()
	if _, err := conn.Eval(t.Context(), publishScript, []string{channel}, []string{channel, payload}); err != nil {
		t.Fatalf("publishing on %q: %v", channel, err)
	}
}

func checkPayloads(t *testing.T, who string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("%s got %q, want %q", who, got, want)
	}
}

func testNotify(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	n := notifier(t, newConn)
	channel := newChannel("notify")
	in := newInbox()
	subscribe(t, n, channel, in)
	want := []string{"first", "", "bytes \x00\xff", "last"}
	for _, p := range want {
		publish(t, n, channel, p)
	}
	in.await(t, "subscriber", len(want))
	checkPayloads(t, "subscriber", in.got(), want)
}

func testNotifyShared(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	n := notifier(t, newConn)
	channels := []string{newChannel("a"), newChannel("b")}
	const perChannel = 3
	inboxes := make([][]*inbox, len(channels))
	for c, channel := range channels {
		for range perChannel {
			in := newInbox()
			subscribe(t, n, channel, in)
			inboxes[c] = append(inboxes[c], in)
		}
	}
	for c, channel := range channels {
		publish(t, n, channel, fmt.Sprintf("for channel %d", c))
	}
	for c := range channels {
		for s, in := range inboxes[c] {
			who := fmt.Sprintf("subscriber %d of channel %d", s, c)
			in.await(t, who, 1)
			checkPayloads(t, who, in.got(), []string{fmt.Sprintf("for channel %d", c)})
		}
	}
}

// testNotifyCancel: a message published later on a channel still
// subscribed marks the point by which the cancelled subscription would
// have received its message.
func testNotifyCancel(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	n := notifier(t, newConn)
	same, other := newChannel("same"), newChannel("other")
	cancelled, sameKept, otherKept := newInbox(), newInbox(), newInbox()
	cancel := subscribe(t, n, same, cancelled)
	cancelSame := subscribe(t, n, same, sameKept)
	cancelOther := subscribe(t, n, other, otherKept)

	publish(t, n, same, "before")
	cancelled.await(t, "subscriber to be cancelled", 1)
	cancel()
	cancel() // a second call is harmless
	publish(t, n, same, "after")
	publish(t, n, other, "marker")
	sameKept.await(t, "remaining subscriber of the channel", 2)
	otherKept.await(t, "subscriber of the other channel", 1)
	checkPayloads(t, "cancelled subscriber", cancelled.got(), []string{"before"})
	checkPayloads(t, "remaining subscriber", sameKept.got(), []string{"before", "after"})
	checkPayloads(t, "subscriber of the other channel", otherKept.got(), []string{"marker"})

	// With every subscription ended the Notifier may close its
	// connection; a new subscription works all the same.
	cancelSame()
	cancelOther()
	again := newInbox()
	subscribe(t, n, same, again)
	publish(t, n, same, "again")
	again.awaitPayload(t, "new subscriber", "again")
	// Messages published before Subscribe returned may arrive too, as
	// the Notifier contract allows: on a Redis Cluster a subscription
	// held on another node than the publisher's hears of each message
	// over the cluster bus, and a node that was descheduled for a while
	// can read its new client's SUBSCRIBE before the older messages.
	// They come in publish order, so what arrives is the end of the
	// channel's history, up to "again".
	history := []string{"before", "after", "again"}
	got := again.got()
	checkPayloads(t, "new subscriber", got, history[len(history)-min(len(got), len(history)):])
	checkPayloads(t, "ended subscriber", sameKept.got(), []string{"before", "after"})
}

func testNotifyContextDone(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	n := notifier(t, newConn)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	channel := newChannel("done")
	in := newInbox()
	stop, err := n.Subscribe(ctx, channel, in.deliver)
	if !errors.Is(err, context.Canceled) {
		if stop != nil {
			stop()
		}
		t.Fatalf("Subscribe with a cancelled ctx = %v, want an error matching context.Canceled", err)
	}
	// A live subscription to the same channel then gets the messages,
	// and the failed one none.
	live := newInbox()
	subscribe(t, n, channel, live)
	publish(t, n, channel, "x")
	live.await(t, "live subscriber", 1)
	checkPayloads(t, "subscriber with a cancelled ctx", in.got(), nil)
}
