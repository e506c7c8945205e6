package resp

import (
	"context"
	"net"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Notifier is a Conn that also implements driver.Notifier, sharing one
// pub/sub connection to the server among all its subscribers.
type Notifier struct {
	*Conn
	hub *pubsub.Hub
}

var _ driver.Notifier = (*Notifier)(nil)

// DialNotifier returns a Notifier for the server at addr.
func DialNotifier(addr string) *Notifier {
	n := &Notifier{Conn: Dial(addr)}
	n.hub = pubsub.NewHub(n.dialPubSub)
	return n
}

// Subscribe implements driver.Notifier.
func (n *Notifier) Subscribe(ctx context.Context, channel string, deliver func(payload string)) (func(), error) {
	return n.hub.Subscribe(ctx, channel, deliver)
}

func (n *Notifier) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", n.addr)
	if err != nil {
		return nil, err
	}
	return subscriber{newWire(nc)}, nil
}

// subscriber is a Wire in subscriber mode.
type subscriber struct{ *Wire }

// Subscribe implements [pubsub.Conn].
func (s subscriber) Subscribe(ctx context.Context, channels ...string) error {
	return s.sendBy(ctx, append([]string{"SUBSCRIBE"}, channels...))
}

// Unsubscribe implements [pubsub.Conn].
func (s subscriber) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.sendBy(ctx, append([]string{"UNSUBSCRIBE"}, channels...))
}

func (s subscriber) sendBy(ctx context.Context, args []string) error {
	deadline, _ := ctx.Deadline()
	s.nc.SetWriteDeadline(deadline)
	return s.send(args)
}

// Receive implements [pubsub.Conn].
func (s subscriber) Receive(ctx context.Context, hub *pubsub.Hub) error {
	stop := context.AfterFunc(ctx, func() { s.nc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		reply, err := s.read(0)
		if isReply(err) {
			hub.Refused(err)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		push, ok := reply.([]any)
		if !ok || len(push) < 3 {
			continue
		}
		kind, _ := push[0].(string)
		channel, _ := push[1].(string)
		switch kind {
		case "subscribe":
			hub.Confirmed(channel)
		case "message":
			payload, _ := push[2].(string)
			hub.Message(channel, payload)
		}
	}
}

// Close implements [pubsub.Conn].
func (s subscriber) Close() { s.nc.Close() }
