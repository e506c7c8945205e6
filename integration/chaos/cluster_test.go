package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/locksmith-go/locksmith/integration/internal/locktest"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// cluster is five redis-server processes, each reached by the clients only
// through its own in-process toxiproxy proxy, so that network faults can be
// put between the clients and one node, and each with the switch of the
// reply faults its clients' Conns apply. The harness itself talks to the
// nodes directly.
type cluster struct {
	nodes   []*redisnode.Node
	proxies []*toxiproxy.Proxy
	replies []*replySwitch
}

// startCluster starts n nodes configured by cfg and a proxy in front of
// each; everything is torn down when the test ends.
func startCluster(t *testing.T, n int, cfg redisnode.Config) *cluster {
	t.Helper()
	c := &cluster{nodes: redisnode.Start(t, n, cfg)}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	for i, node := range c.nodes {
		p := toxiproxy.NewProxy(server, fmt.Sprintf("node%d", i), "127.0.0.1:0", node.Addr())
		if err := p.Start(); err != nil {
			t.Fatalf("proxy for %s: %v", node.Addr(), err)
		}
		t.Cleanup(p.Stop)
		c.proxies = append(c.proxies, p)
		c.replies = append(c.replies, new(replySwitch))
	}
	return c
}

// addrs returns the proxies' addresses, in node order: what clients dial.
func (c *cluster) addrs() []string {
	out := make([]string, len(c.proxies))
	for i, p := range c.proxies {
		out[i] = p.Listen
	}
	return out
}

// addToxic puts a toxic of type typ with the given attributes on the stream
// ("upstream": towards Redis, "downstream": towards the client) of node i's
// proxy, under name.
func (c *cluster) addToxic(i int, name, typ, stream string, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := c.proxies[i].Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("node %d: toxic %s: %w", i, name, err)
	}
	return nil
}

// dropConnections stops node i's proxy, closing every connection through
// it; reopen starts it again on the same address.
func (c *cluster) dropConnections(i int) { c.proxies[i].Stop() }

func (c *cluster) reopen(i int) error {
	if err := c.proxies[i].Start(); err != nil {
		return fmt.Errorf("node %d: restarting its proxy: %w", i, err)
	}
	return nil
}

// clearToxics removes every toxic from node i's proxy.
func (c *cluster) clearToxics(i int) {
	c.proxies[i].Toxics.ResetToxics(context.Background())
}

// storedKeys lists every key of every node with its PTTL. A key that
// expires between KEYS and PTTL is left out.
func (c *cluster) storedKeys(t *testing.T) []storedKey {
	var out []storedKey
	for i, n := range c.nodes {
		for _, key := range locktest.Keys(t, n, "*") {
			switch pttl := locktest.PTTL(t, n, key); {
			case pttl == -2: // expired meanwhile
			case pttl < 0:
				out = append(out, storedKey{Node: i, Key: key, PTTL: int64(pttl)})
			default:
				out = append(out, storedKey{Node: i, Key: key, PTTL: pttl.Milliseconds()})
			}
		}
	}
	return out
}

// settle ends when every lock key set before it was called has expired:
// the longest TTL plus the drift a node's clock may add.
func settle(maxTTL time.Duration) {
	time.Sleep(maxTTL + maxTTL/10 + 100*time.Millisecond)
}
