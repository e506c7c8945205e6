package redigo

import (
	"context"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/internal/adapt"
)

// Subscribe implements [driver.Notifier]. All subscriptions of the Conn
// share one connection taken from the pool and used as a redis.PubSubConn;
// it is held while any subscription lasts, so it counts against the pool's
// MaxActive, and goes back to the pool (closed) after the last one ends.
// When it breaks, the Conn takes another and subscribes again; messages
// published in between are lost.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	return c.hub.Subscribe(ctx, channel, deliver)
}

func (c *Conn) dialPubSub(ctx context.Context) (adapt.PubSub, error) {
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, adapt.ContextErr(ctx, err)
	}
	return pubSub{redis.PubSubConn{Conn: conn}}, nil
}

// pubSub is a redis.PubSubConn as an adapt.Hub drives it.
type pubSub struct {
	psc redis.PubSubConn
}

func (p pubSub) Subscribe(ctx context.Context, channels ...string) error {
	if err := p.psc.Subscribe(redis.Args{}.AddFlat(channels)...); err != nil {
		return adapt.ContextErr(ctx, err)
	}
	return nil
}

func (p pubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	if err := p.psc.Unsubscribe(redis.Args{}.AddFlat(channels)...); err != nil {
		return adapt.ContextErr(ctx, err)
	}
	return nil
}

func (p pubSub) Receive(ctx context.Context, hub *adapt.Hub) error {
	for {
		// ReceiveContext closes the connection when ctx ends, which
		// ends the read.
		switch msg := p.psc.ReceiveContext(ctx).(type) {
		case redis.Subscription:
			if msg.Kind == "subscribe" {
				hub.Confirmed(msg.Channel)
			}
		case redis.Message:
			hub.Message(msg.Channel, string(msg.Data))
		case redis.Error:
			hub.Refused(msg) // an error reply: the connection is fine
		case error:
			if ctx.Err() != nil {
				return nil
			}
			return msg
		}
	}
}

// Close hands the connection back to the pool, which discards it: it is
// either broken or was closed by the end of Receive's ctx.
func (p pubSub) Close() { p.psc.Close() }
