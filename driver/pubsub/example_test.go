package pubsub_test

import (
	"context"
	"fmt"

	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// event is what a pub/sub connection reads from the server: the
// confirmation of a subscription, or a message.
type event struct {
	kind, channel, payload string
}

// pubSub stands in for a client's pub/sub connection, as an adapter wraps
// it in a pubsub.Conn: the server's side of the connection writes to
// events.
type pubSub struct {
	events chan event
}

func (p pubSub) Subscribe(_ context.Context, channels ...string) error {
	for _, ch := range channels {
		p.events <- event{kind: "subscribe", channel: ch} // the server confirms
	}
	return nil
}

func (p pubSub) Unsubscribe(context.Context, ...string) error { return nil }

// Receive reports what the connection reads to hub until ctx ends.
func (p pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-p.events:
			switch e.kind {
			case "subscribe":
				hub.Confirmed(e.channel)
			case "message":
				hub.Message(e.channel, e.payload)
			}
		}
	}
}

func (p pubSub) Close() {}

// A Hub serves the Subscribe method of an adapter's driver.Notifier over
// one pub/sub connection, which it opens with the function given to NewHub
// for the first subscription and closes after the last one ends.
func ExampleHub() {
	conn := pubSub{events: make(chan event, 16)}
	hub := pubsub.NewHub(func(context.Context) (pubsub.Conn, error) {
		return conn, nil
	})

	got := make(chan string, 1)
	cancel, err := hub.Subscribe(context.Background(), "released", func(payload string) {
		got <- payload
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cancel()

	conn.events <- event{kind: "message", channel: "released", payload: "lock:1"} // PUBLISH released lock:1
	fmt.Println(<-got)
	// Output: lock:1
}
