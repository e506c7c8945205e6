package observe_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The examples run a Client over in-process nodes: none of its goroutines
// may outlive them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
