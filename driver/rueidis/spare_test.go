package rueidis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver/adapter"
	"github.com/locksmith-go/locksmith/driver/drivertest"
	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
)

// deadlineOnly returns the context of a locksmith round that lives for d:
// one that only its deadline ends.
func deadlineOnly(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := adapter.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A call with a deadline-only context has a dedicated connection opened
// for the next such call, which runs on it; Wait gives it back.
func TestSpareConnectionForDeadlineOnlyCalls(t *testing.T) {
	server, _ := testServers(t)
	conn := lsrueidis.New(newClient(t, singleServerOptions(server)))
	if lsrueidis.HasSpare(conn) {
		t.Fatal("a new Conn keeps a spare connection")
	}
	if got, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 'first'`, nil, nil); err != nil || got != "first" {
		t.Fatalf("first Eval = %v, %v; want %q, nil", got, err, "first")
	}
	if err := lsrueidis.WaitForSpare(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	if !lsrueidis.HasSpare(conn) {
		t.Fatal("no spare connection after a call with a deadline-only context")
	}
	if got, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 'second'`, nil, nil); err != nil || got != "second" {
		t.Fatalf("second Eval = %v, %v; want %q, nil", got, err, "second")
	}
	if !lsrueidis.HasSpare(conn) {
		t.Fatal("the spare connection was not kept after a call that succeeded on it")
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if lsrueidis.HasSpare(conn) {
		t.Fatal("Wait did not give back the spare connection")
	}
}

// withSpare returns a Conn over a client of the test server that keeps a
// spare connection, opened after a call with a deadline-only context.
func withSpare(t *testing.T) *lsrueidis.Conn {
	t.Helper()
	server, _ := testServers(t)
	conn := lsrueidis.New(newClient(t, singleServerOptions(server)))
	if _, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 1`, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := lsrueidis.WaitForSpare(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	if !lsrueidis.HasSpare(conn) {
		t.Fatal("no spare connection after a call with a deadline-only context")
	}
	return conn
}

// A call that finds the spare connection in another call's hands runs as
// if there were none, and opens no second one.
func TestSpareConnectionInUseIsNotOpenedAgain(t *testing.T) {
	conn := withSpare(t)
	putBack, ok := lsrueidis.HoldSpare(conn)
	if !ok {
		t.Fatal("withSpare's Conn keeps no spare connection")
	}
	for i := range 3 {
		if got, err := conn.Eval(deadlineOnly(t, 5*time.Second), `return 2`, nil, nil); err != nil || got != int64(2) {
			t.Fatalf("Eval %d while the spare is in use = %v, %v; want 2, nil", i, got, err)
		}
	}
	if err := lsrueidis.WaitForSpare(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	if n := lsrueidis.Dedicated(conn); n != 1 {
		t.Errorf("the Conn has %d dedicated connections while its spare is in use; want 1", n)
	}
	putBack()
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := lsrueidis.Dedicated(conn); n != 0 {
		t.Errorf("the Conn has %d dedicated connections after Wait; want 0", n)
	}
}

// A call on the spare connection ends at its deadline while the server is
// still busy, and a connection that failed a call is not kept.
func TestSpareConnectionCallEndsAtDeadline(t *testing.T) {
	conn := withSpare(t)
	ctx := deadlineOnly(t, 5*time.Millisecond)
	got, err := conn.Eval(ctx, drivertest.BusyScript, nil, busyArgs)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Eval of a 50ms script with a 5ms deadline-only context = %v, %v; want an error matching context.DeadlineExceeded", got, err)
	}
	if lsrueidis.HasSpare(conn) {
		t.Fatal("the Conn kept the connection whose call failed")
	}
	// The server answers again once the script ended.
	waitCtx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if got, err := conn.Eval(waitCtx, `return 'still usable'`, nil, nil); err != nil || got != "still usable" {
		t.Errorf("Eval after the call that failed = %v, %v; want %q, nil", got, err, "still usable")
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
