package rueidis_test

import (
	"context"
	"errors"
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
	conn, err := lsrueidis.Open(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("Open with the node down = %v, want nil", err)
	}
	defer conn.Close()
	// A second Conn to the server must be refused by redlock.New while the
	// server is down too, or one server would count as two nodes.
	if got, want := conn.NodeID(), "tcp://"+strings.Replace(addr, "127.0.0.1", "localhost", 1); got != want {
		t.Errorf("NodeID with the node down = %q, want %q", got, want)
	}

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
	opt := rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}
	conn, err := lsrueidis.Open(opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer conn.Close()
	// Without ForceSingleClient, rueidis takes miniredis for a cluster.
	opt.ForceSingleClient = true
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

// Open is for one server: an option without an InitAddress, with two, or
// with a Sentinel is refused.
func TestOpenRefusesOption(t *testing.T) {
	tests := []struct {
		name   string
		option rueidis.ClientOption
	}{
		{"no InitAddress", rueidis.ClientOption{}},
		{"two InitAddresses", rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1", "127.0.0.1:2"}}},
		{"Sentinel", rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1"}, Sentinel: rueidis.SentinelOption{MasterSet: "main"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := lsrueidis.Open(tt.option)
			if err == nil {
				conn.Close()
				t.Fatal("Open = nil error, want one")
			}
		})
	}
}

func TestNilConnWaitAndClose(t *testing.T) {
	var conn *lsrueidis.Conn
	conn.Close()
	if err := conn.Wait(context.Background()); err != nil {
		t.Errorf("Wait on a nil Conn = %v, want nil", err)
	}
}

// Every call after Close returns the closed client's error.
func TestOpenCallsAfterClose(t *testing.T) {
	opt := rueidis.ClientOption{InitAddress: []string{miniredis.RunT(t).Addr()}, DisableCache: true}
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
	for i := range 3 {
		_, err := conn.Eval(ctx, `return 1`, nil, nil)
		if !errors.Is(err, rueidis.ErrClosing) {
			t.Fatalf("Eval %d after Close = %v; want an error matching rueidis.ErrClosing", i, err)
		}
	}
	if err := conn.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
