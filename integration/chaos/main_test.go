package chaos

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// TestMain fails the run when a server outlives it (redisnode.Main) or a
// goroutine does: the workers, the proxies and the clients must all have
// stopped. The one exception is toxiproxy's own: v2.5.0 leaves the
// goroutine of a toxic blocked on a channel send when the link it fed is
// torn down with data in flight, which the suite cannot reach.
func TestMain(m *testing.M) {
	code := redisnode.Main(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run")); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
