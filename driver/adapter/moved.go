package adapter

import (
	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/pubsub"
)

// Moved: NoScript is driver.MarkNoScript, and the Hub lives in package
// driver/pubsub.
var (
	NoScript = driver.MarkNoScript
	NewHub   = pubsub.NewHub
)

type (
	Hub    = pubsub.Hub
	PubSub = pubsub.Conn
)
