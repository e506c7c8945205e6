package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

// subscriber is what a go-redis client needs to open a pub/sub connection:
// *redis.Client, *redis.ClusterClient, *redis.Ring and redis.UniversalClient
// all have it, a bare redis.Scripter may not.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Errors of Subscribe for clients that cannot share one subscription.
var (
	errCannotSubscribe = errors.New("goredis: the client given to New has no Subscribe method, so it cannot deliver release notifications")
	errRing            = errors.New("goredis: a redis.Ring subscribes on the shard of each channel, not over one shared connection, so it delivers no release notifications")
)

// Subscribe implements [driver.Notifier] with the client's own pub/sub
// support (redis.PubSub). All subscriptions of the Conn share one pub/sub
// connection, which the Conn opens for the first subscription and closes
// after the last one ends; when it breaks, the Conn opens another and
// subscribes again, and messages published in between are lost.
//
// A *redis.Ring, and a client without a Subscribe method (see [New]),
// report an error, and locksmith then polls that node.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil || c.client == nil {
		return nil, errNoClient
	}
	if _, ok := c.client.(*redis.Ring); ok {
		return nil, errRing
	}
	if _, ok := c.client.(subscriber); !ok {
		return nil, errCannotSubscribe
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

func (c *Conn) dialPubSub(ctx context.Context) (adapter.PubSub, error) {
	// The connection opens with the first SUBSCRIBE.
	return pubSub{c.client.(subscriber).Subscribe(ctx)}, nil
}

// pubSub is a redis.PubSub as an [adapter.Hub] drives it.
type pubSub struct {
	ps *redis.PubSub
}

func (p pubSub) Subscribe(ctx context.Context, channels ...string) error {
	return p.ps.Subscribe(ctx, channels...)
}

func (p pubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	return p.ps.Unsubscribe(ctx, channels...)
}

func (p pubSub) Receive(ctx context.Context, hub *adapter.Hub) error {
	// redis.PubSub.Receive does not return when its ctx is cancelled;
	// closing the PubSub ends the read.
	stop := context.AfterFunc(ctx, func() { p.ps.Close() })
	defer stop()
	for {
		msg, err := p.ps.Receive(context.Background())
		if ctx.Err() != nil {
			return nil
		}
		var refusal redis.Error
		if errors.As(err, &refusal) {
			hub.Refused(err) // an error reply: the connection is fine
			continue
		}
		if err != nil {
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

func (p pubSub) Close() { p.ps.Close() }
