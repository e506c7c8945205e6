package rueidis_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	lsrueidis "github.com/locksmith-go/locksmith/driver/rueidis"
)

// freeAddr returns a loopback address on which nothing listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A node that is down when Open is called makes calls fail, without
// making Open fail, and is used once it is up.
func TestOpenNodeDownAtStart(t *testing.T) {
	addr := freeAddr(t)
	conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("Open with the node down = %v, want nil", err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, err := conn.Eval(ctx, `return 1`, nil, nil); err == nil || ctx.Err() != nil {
		t.Fatalf("Eval with the node down = %v, %v (ctx %v); want an error before ctx ends", got, err, ctx.Err())
	}

	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(addr); err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	defer server.Close()
	for {
		got, err := conn.Eval(ctx, `return 1`, nil, nil)
		if err == nil {
			if got != int64(1) {
				t.Fatalf("Eval = %v, want 1", got)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Eval still failing after the node came up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A Conn from Open reports the same NodeID as one from New for the same
// server, and refuses calls once closed.
func TestOpenNodeIDAndClose(t *testing.T) {
	addr := miniredis.RunT(t).Addr()
	opt := rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true}
	conn, err := lsrueidis.Open(opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer conn.Close()
	if got, want := conn.NodeID(), lsrueidis.New(newClient(t, opt)).NodeID(); got != want {
		t.Errorf("Open's NodeID = %q, New's = %q; want them equal", got, want)
	}
	if _, err := conn.Eval(context.Background(), `return 1`, nil, nil); err != nil {
		t.Fatalf("Eval: %v", err)
	}
	conn.Close()
	conn.Close() // a second Close is harmless
	if _, err := conn.Eval(context.Background(), `return 1`, nil, nil); err == nil {
		t.Error("Eval after Close = nil error, want one")
	}
}

func TestOpenWithoutAddress(t *testing.T) {
	conn, err := lsrueidis.Open(rueidis.ClientOption{})
	if err == nil {
		conn.Close()
		t.Fatal("Open without InitAddress = nil error, want one")
	}
}

func TestNilConnWaitAndClose(t *testing.T) {
	var conn *lsrueidis.Conn
	conn.Close()
	if err := conn.Wait(context.Background()); err != nil {
		t.Errorf("Wait on a nil Conn = %v, want nil", err)
	}
}

// Every call after Close returns the Conn's own error, not one of the
// closed client's, and opens no connection.
func TestOpenCallsAfterClose(t *testing.T) {
	opt := rueidis.ClientOption{InitAddress: []string{miniredis.RunT(t).Addr()}, DisableCache: true, ForceSingleClient: true}
	conn, err := lsrueidis.Open(opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Eval(ctx, `return 1`, nil, nil); err != nil {
		t.Fatalf("Eval: %v", err)
	}
	conn.Close()
	for i := range 100 {
		_, err := conn.Eval(ctx, `return 1`, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "Conn closed") {
			t.Fatalf("Eval %d after Close = %v; want the Conn's error for a closed Conn", i, err)
		}
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
