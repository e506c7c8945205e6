package redigo

import (
	"context"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Subscribe implements [driver.Notifier]. All subscriptions of the Conn
// share one connection taken from the pool and used as a redis.PubSubConn;
// it is held while any subscription lasts, so it counts against the pool's
// MaxActive, and goes back to the pool (closed) after the last one ends.
//
// The connection's own read timeout (redis.DialReadTimeout) does not apply
// to it: a channel may stay quiet for long. Instead it gets a PING every
// second and counts as broken when nothing at all arrives for three
// seconds. When it breaks, the Conn takes another and subscribes again;
// messages published in between are lost.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil {
		return nil, errNoPool
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

// readWait is how long the shared pub/sub connection waits for anything (a
// message, a confirmation, the reply to one of the Hub's PINGs) before it
// counts as broken.
const readWait = 3 * pubsub.PingInterval

func (c *Conn) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return pubSub{redis.PubSubConn{Conn: conn}}, nil
}

// pubSub is a redis.PubSubConn as a [pubsub.Hub] drives it. redigo allows
// one writer at a time beside one reader; the Hub serializes the writes.
type pubSub struct {
	psc redis.PubSubConn
}

var _ pubsub.Pinger = pubSub{}

func (p pubSub) Subscribe(_ context.Context, channels ...string) error {
	return p.psc.Subscribe(redis.Args{}.AddFlat(channels)...)
}

func (p pubSub) Unsubscribe(_ context.Context, channels ...string) error {
	return p.psc.Unsubscribe(redis.Args{}.AddFlat(channels)...)
}

func (p pubSub) Ping(context.Context) error { return p.psc.Ping("") }

// Receive reads with a timeout of its own rather than the connection's;
// the Hub's PINGs keep it from firing on a quiet channel, and wake the
// read when ctx ends.
func (p pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	for {
		switch msg := p.psc.ReceiveWithTimeout(readWait).(type) {
		case redis.Subscription:
			if msg.Kind == "subscribe" {
				hub.Confirmed(msg.Channel)
			}
		case redis.Message:
			hub.Message(msg.Channel, string(msg.Data))
		case redis.Pong:
			if ctx.Err() != nil {
				return nil
			}
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

// Close discards the connection. It first has redigo close the socket
// (a receive whose ctx is already done does that, after handing out any
// reply already read), so that giving the connection back to the pool
// does not wait for a server that stopped answering to confirm the
// connection's unsubscription.
func (p pubSub) Close() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		if _, err := redis.ReceiveContext(p.psc.Conn, done); err != nil {
			break
		}
	}
	p.psc.Close()
}
