package cluster

import (
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/locksmith-go/locksmith/driver"
	lsgoredis "github.com/locksmith-go/locksmith/driver/goredis"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
	lsvalkeygo "github.com/locksmith-go/locksmith/driver/valkeygo"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }

// clusterClient builds a Conn to a whole Redis Cluster from the addresses
// of its masters.
type clusterClient struct {
	name string
	conn func(t *testing.T, addrs []string) driver.Conn
}

var clusterClients = []clusterClient{
	{"goredis_ClusterClient", func(t *testing.T, addrs []string) driver.Conn {
		client := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = client.Close() })
		return lsgoredis.New(client)
	}},
	{"rueidis_cluster", func(t *testing.T, addrs []string) driver.Conn {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
		if err != nil {
			t.Fatalf("rueidis cluster client: %v", err)
		}
		t.Cleanup(client.Close)
		if client.Mode() != rueidis.ClientModeCluster {
			t.Fatalf("rueidis client for %v is in mode %v, want cluster", addrs, client.Mode())
		}
		return lsrueidis.New(client)
	}},
	{"valkeygo_cluster", func(t *testing.T, addrs []string) driver.Conn {
		client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs})
		if err != nil {
			t.Fatalf("valkey-go cluster client: %v", err)
		}
		t.Cleanup(client.Close)
		if client.Mode() != valkey.ClientModeCluster {
			t.Fatalf("valkey-go client for %v is in mode %v, want cluster", addrs, client.Mode())
		}
		return lsvalkeygo.New(client)
	}},
}

func addrs(nodes []*redisnode.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr()
	}
	return out
}
