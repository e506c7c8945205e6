// Command locksmith runs a program under a distributed lock held on a
// quorum of Redis nodes, shows who holds a lock, checks that the nodes are
// fit for Redlock, and releases locks left behind.
//
//	locksmith run [flags] KEY -- COMMAND [ARGS...]
//	locksmith status [--json] [--limit N] KEY...
//	locksmith doctor [--json]
//	locksmith release KEY (--value VALUE | --value-file FILE | --force --confirm KEY)
//
// The nodes come from --nodes or LOCKSMITH_NODES as redis:// or rediss://
// URLs. Run "locksmith help" for the flags, the environment and the exit
// codes.
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"
)

// quietLogger drops the go-redis client's own log lines (failed dials,
// pool events): locksmith reports every failure that matters itself.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietLogger{})
	os.Exit(newApp(os.Stdout, os.Stderr).execute(os.Args[1:]))
}
