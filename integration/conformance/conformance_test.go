package conformance

import (
	"testing"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	"github.com/locksmith-go/locksmith/integration/internal/adapters"
	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// TestConformance runs drivertest.Run for every adapter, each against a
// server of its own so that no suite's busy script slows another's, with
// the hooks of the rules about stalled nodes and node identity.
func TestConformance(t *testing.T) {
	all := adapters.All()
	nodes := redisnode.Start(t, len(all), redisnode.Config{})
	for i, a := range all {
		addr := nodes[i].Addr()
		t.Run(a.Name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) driver.Conn {
				return a.Conn(t, addr)
			}, drivertest.WithFaults(faults(a.Name, nodes[i])),
				drivertest.WithIdentity(identity(a, nodes[i], nodes[(i+1)%len(nodes)])))
		})
	}
}
