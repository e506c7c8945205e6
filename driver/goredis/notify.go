package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// subscriber opens a pub/sub connection: every go-redis client can, but a
// bare redis.Scripter may not.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Subscribe implements [driver.Notifier] over one redis.PubSub connection
// that all subscriptions of the Conn share (see [pubsub.Hub]). A
// *redis.Ring, which subscribes on each channel's shard, and a client
// without a Subscribe method return an error: locksmith then polls.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	if _, ok := c.client.(subscriber); !ok {
		return nil, errors.New("goredis: the client has no Subscribe method")
	}
	if _, ok := c.client.(*redis.Ring); ok {
		return nil, errors.New("goredis: a redis.Ring cannot share one pub/sub connection")
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

func (c *Conn) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	// The connection opens with the first SUBSCRIBE.
	return pubSub{c.client.(subscriber).Subscribe(ctx)}, nil
}

// pubSub is a redis.PubSub as a [pubsub.Hub] drives it.
type pubSub struct {
	*redis.PubSub
}

func (p pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	// redis.PubSub.Receive does not return when its ctx is cancelled;
	// closing the PubSub ends the read.
	stop := context.AfterFunc(ctx, func() { p.PubSub.Close() })
	defer stop()
	for {
		msg, err := p.PubSub.Receive(context.Background())
		var refusal redis.Error
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &refusal):
			hub.Refused(err) // an error reply: the connection is fine
		case err != nil:
			return err
		}
		switch msg := msg.(type) {
		case *redis.Subscription:
			if msg.Kind == "subscribe" {
				hub.Confirmed(msg.Channel)
			}
		case *redis.Message:
			hub.Message(msg.Channel, msg.Payload)
		}
	}
}

func (p pubSub) Close() { p.PubSub.Close() }
