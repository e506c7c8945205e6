package behaviour

import (
	"fmt"
	"os"
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }

// sizes are the numbers of nodes every behaviour is checked on.
var sizes = []int{1, 3, 5}

// forEachSetup starts five nodes and runs body once per adapter and size,
// on the first 1, 3 and 5 of them, as subtests named adapter/N_nodes.
// Subtests share the servers and keep apart by their keys (locktest.Key).
func forEachSetup(t *testing.T, body func(t *testing.T, a adapters.Adapter, nodes []*redisnode.Node)) {
	t.Helper()
	nodes := redisnode.Start(t, sizes[len(sizes)-1], redisnode.Config{})
	for _, a := range adapters.All() {
		t.Run(a.Name, func(t *testing.T) {
			for _, n := range sizes {
				t.Run(nodesName(n), func(t *testing.T) { body(t, a, nodes[:n]) })
			}
		})
	}
}

// nodesName names a subtest after its number of nodes.
func nodesName(n int) string {
	if n == 1 {
		return "1_node"
	}
	return fmt.Sprintf("%d_nodes", n)
}
