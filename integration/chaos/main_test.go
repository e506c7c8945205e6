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
// stopped.
func TestMain(m *testing.M) {
	code := redisnode.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
