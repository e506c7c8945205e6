package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// RunUnmade checks Conns that their adapter's constructor did not make,
// such as the zero value of the adapter's Conn type and a nil pointer to
// it: Eval, EvalSha and ScriptLoad return an error, with a context with and
// without a deadline; Subscribe of a [driver.Notifier] returns an
// error; Wait of a [driver.Waiter] returns nil; and no method, NodeID of a
// [driver.Identifier] and ServerID of a [driver.ServerIdentifier]
// included, panics. It needs no server.
func RunUnmade(t *testing.T, conns ...driver.Conn) {
	t.Helper()
	for i, conn := range conns {
		t.Run(fmt.Sprintf("conn%d", i), func(t *testing.T) {
			testUnmade(t, conn)
		})
	}
}

func testUnmade(t *testing.T, conn driver.Conn) {
	withDeadline, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, ctx := range []context.Context{t.Context(), withDeadline} {
		for _, c := range calls(conn, unknownDigest) {
			if got, err := c.run(ctx); err == nil {
				t.Errorf("%s on %#v = %s, nil; want an error", c.method, conn, describe(got))
			}
		}
	}
	if n, ok := conn.(driver.Notifier); ok {
		if cancel, err := n.Subscribe(t.Context(), "{unmade}:released", func(string) {}); err == nil {
			cancel()
			t.Errorf("Subscribe on %#v = nil error; want one", conn)
		}
	}
	if w, ok := conn.(driver.Waiter); ok {
		if err := w.Wait(t.Context()); err != nil {
			t.Errorf("Wait on %#v = %v; want nil", conn, err)
		}
	}
	if h, ok := conn.(driver.DeadlineHonorer); ok {
		_ = h.HonorsDeadline()
	}
	if id, ok := conn.(driver.Identifier); ok {
		_ = id.NodeID() // any value: redlock.New refuses such a Conn anyway
	}
	if s, ok := conn.(driver.ServerIdentifier); ok {
		_, _ = s.ServerID()
	}
}
