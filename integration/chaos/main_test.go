package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// TestMain fails the run when a server outlives it or a goroutine does
// (redisnode.Main): the workers, the proxies and the clients must all have
// stopped. The exceptions are toxiproxy's own. v2.5.0 leaves the goroutine
// of a toxic, and the reader of a link, blocked on a channel send when the
// link is torn down with data in flight, which the suite cannot reach (the
// long profile leaves a few dozen of them). And a proxy whose toxic change
// deadlocked (see cluster.changeToxics) leaves that change, its link
// interrupts, the link writers and accept loop waiting for the lock, and
// the Stop waiting for the accept loop, for good.
func TestMain(m *testing.M) {
	const toxiproxy = "github.com/Shopify/toxiproxy/v2"
	ignore := []string{
		toxiproxy + "/toxics.(*ToxicStub).Run",
		toxiproxy + ".(*ToxicLink).read",
		// A wedged proxy's.
		toxiproxy + ".(*ToxicCollection).ResetToxics",
		toxiproxy + ".(*ToxicCollection).AddToxicJson",
		toxiproxy + ".(*ToxicLink).RemoveToxic",
		toxiproxy + "/toxics.(*ToxicStub).InterruptToxic",
		toxiproxy + ".(*ToxicCollection).RemoveLink",
		toxiproxy + ".(*ToxicCollection).StartLink",
		toxiproxy + ".(*Proxy).Stop",
		// The proxy's listener closer; a stack names the package with its
		// dot escaped.
		"gopkg.in/tomb%2ev1.(*Tomb).Wait",
	}
	opts := make([]goleak.Option, len(ignore))
	for i, fn := range ignore {
		opts[i] = goleak.IgnoreAnyFunction(fn)
	}
	os.Exit(redisnode.Main(m, opts...))
}
