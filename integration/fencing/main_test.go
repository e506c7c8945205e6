// Package fencing checks fencing tokens over real Redis servers: the
// token properties under random minority faults, counters that survive a
// restart with persistence, and, as a negative control, tokens that go
// back after a restart without it. It holds tests only.
package fencing

import (
	"os"
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }
