package rueidis

import (
	"errors"

	"github.com/redis/rueidis"
)

// Open returns a Conn for the one server that option describes, and owns
// its client: [Conn.Close] closes it. Unlike rueidis.NewClient, it returns
// a Conn while the server is down, so that a program starts while a
// minority of its nodes is down, as a Redlock allows: it sets
// option.ForceSingleClient and keeps the client that rueidis.NewClient
// returns even when its first dial (up to option.Dialer.Timeout) failed.
// Each call then dials again until the server is up.
//
// Open returns an error for an option that does not name exactly one
// InitAddress or that names a Sentinel, and for one rueidis.NewClient
// refuses; wrap the client of a Cluster or Sentinel deployment with [New].
func Open(option rueidis.ClientOption) (*Conn, error) {
	if len(option.InitAddress) != 1 || option.Sentinel.MasterSet != "" {
		return nil, errors.New("rueidis: Open needs one InitAddress and no Sentinel")
	}
	option.ForceSingleClient = true
	client, err := rueidis.NewClient(option)
	if client == nil {
		return nil, err
	}
	c := New(client)
	c.owned = true
	return c, nil
}

// Close closes the client of a Conn from [Open]; calls after Close
// return an error. For a Conn from [New], whose client is the caller's,
// Close does nothing.
func (c *Conn) Close() {
	if c != nil && c.owned {
		c.client.Close()
	}
}
