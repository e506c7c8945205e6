// Package fencing checks fencing tokens over real Redis servers: the
// token properties under random minority faults, and counters that survive
// a restart with persistence. It holds tests only.
package fencing

import (
	"os"
	"testing"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }
