package rueidis

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Subscribe implements [driver.Notifier]. All subscriptions of the Conn
// share one dedicated connection of the client (Client.Dedicate) with
// pub/sub hooks, held while any subscription lasts and given back after the
// last one ends. When it breaks, the Conn takes another and subscribes
// again; messages published in between are lost.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil {
		return nil, errNoClient
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

func (c *Conn) dialPubSub(context.Context) (pubsub.Conn, error) {
	dc, cancel := c.client.Dedicate()
	failed := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) { c.hub.Message(m.Channel, m.Message) },
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				c.hub.Confirmed(s.Channel)
			}
		},
	})
	return pubSub{dc: dc, cancel: cancel, failed: failed}, nil
}

// pubSub is a dedicated rueidis connection with pub/sub hooks, as an
// [pubsub.Hub] drives it. The hooks report to the Hub directly.
type pubSub struct {
	dc     rueidis.DedicatedClient
	cancel func()
	failed <-chan error // closed when the hooks will not be called again
}

func (p pubSub) Subscribe(ctx context.Context, channels ...string) error {
	return p.dc.Do(ctx, p.dc.B().Subscribe().Channel(channels...).Build()).Error()
}

func (p pubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	return p.dc.Do(ctx, p.dc.B().Unsubscribe().Channel(channels...).Build()).Error()
}

func (p pubSub) Receive(ctx context.Context, _ *pubsub.Hub) error {
	select {
	case err := <-p.failed:
		return err
	case <-ctx.Done():
		return nil
	}
}

func (p pubSub) Close() { p.cancel() }
