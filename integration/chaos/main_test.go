package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// TestMain fails the run when a server outlives it or a goroutine does
// (redisnode.Main): the workers, the proxies and the clients must all have
// stopped. The exceptions are toxiproxy's own: v2.5.0 leaves the goroutine
// of a toxic, and the reader of a link, blocked on a channel send when the
// link is torn down with data in flight, which the suite cannot reach (the
// long profile leaves a few dozen of them).
func TestMain(m *testing.M) {
	os.Exit(redisnode.Main(m,
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read")))
}
