package redigo

import (
	"context"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Subscribe implements [driver.Notifier]. All subscriptions of the Conn
// share one connection taken from the pool and used as a redis.PubSubConn;
// it is held while any subscription lasts, so it counts against the pool's
// MaxActive, and goes back to the pool (closed) after the last one ends.
//
// The connection's own read timeout (redis.DialReadTimeout) does not apply
// to it: a channel may stay quiet for long. Instead the Conn sends a PING
// on it every second and counts it broken when nothing at all arrives for
// three seconds. When it breaks, the Conn takes another and subscribes
// again; messages published in between are lost.
func (c *Conn) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	if c == nil {
		return nil, errNoPool
	}
	return c.hub.Subscribe(ctx, channel, deliver)
}

// Heartbeat of the shared pub/sub connection: a PING every
// pubSubHeartbeat, and a read that waits pubSubReadWait for anything (a
// message, a confirmation, the PING's reply) before it counts the
// connection broken.
const (
	pubSubHeartbeat = time.Second
	pubSubReadWait  = 3 * pubSubHeartbeat
)

func (c *Conn) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return &pubSub{psc: redis.PubSubConn{Conn: conn}}, nil
}

// pubSub is a redis.PubSubConn as a [pubsub.Hub] drives it.
type pubSub struct {
	psc redis.PubSubConn
	// writeMu serializes the writes of the Hub (Subscribe, Unsubscribe,
	// Close) with the heartbeat's PINGs: redigo allows one writer at a
	// time beside one reader.
	writeMu sync.Mutex
}

func (p *pubSub) Subscribe(_ context.Context, channels ...string) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.psc.Subscribe(redis.Args{}.AddFlat(channels)...)
}

func (p *pubSub) Unsubscribe(_ context.Context, channels ...string) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.psc.Unsubscribe(redis.Args{}.AddFlat(channels)...)
}

func (p *pubSub) ping() {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	// A failed write shows in the read too.
	_ = p.psc.Ping("")
}

// Receive reads with a timeout of its own rather than the connection's,
// kept from firing on a quiet channel by the heartbeat. When ctx ends, a
// last PING wakes the read, so Receive returns within a round trip, or
// within pubSubReadWait when the server does not answer.
func (p *pubSub) Receive(ctx context.Context, hub *pubsub.Hub) error {
	done := make(chan struct{})
	var heartbeat sync.WaitGroup
	heartbeat.Go(func() {
		ticker := time.NewTicker(pubSubHeartbeat)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				p.ping()
			case <-ctx.Done():
				p.ping()
				return
			case <-done:
				return
			}
		}
	})
	defer func() {
		close(done)
		heartbeat.Wait()
	}()
	for {
		switch msg := p.psc.ReceiveWithTimeout(pubSubReadWait).(type) {
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
func (p *pubSub) Close() {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		if _, err := redis.ReceiveContext(p.psc.Conn, done); err != nil {
			break
		}
	}
	p.psc.Close()
}
