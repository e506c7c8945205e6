package driver_test

import (
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

func TestAddrNodeID(t *testing.T) {
	tests := []struct {
		network, addr string
		want          string
	}{
		{"tcp", "127.0.0.1:7001", "tcp://localhost:7001"},
		{"tcp", "localhost:7001", "tcp://localhost:7001"},
		{"tcp", "LocalHost.:7001", "tcp://localhost:7001"},
		{"tcp", "[::1]:7001", "tcp://localhost:7001"},
		{"tcp", "[::ffff:127.0.0.1]:7001", "tcp://localhost:7001"},
		{"", ":7001", "tcp://localhost:7001"},
		{"tcp4", "0.0.0.0:7001", "tcp://localhost:7001"},
		{"tcp6", "[::]:7001", "tcp://localhost:7001"},
		{"tcp", "127.0.0.1:07001", "tcp://localhost:7001"},
		{"tcp", "127.0.0.2:7001", "tcp://127.0.0.2:7001"},
		{"tcp", "[2001:DB8:0:0::1]:6379", "tcp://[2001:db8::1]:6379"},
		{"tcp", "Redis-A.example:6379", "tcp://redis-a.example:6379"},
		{"unix", "/run/redis//redis.sock", "unix:///run/redis/redis.sock"},
	}
	for _, tt := range tests {
		got, err := driver.AddrNodeID(tt.network, tt.addr)
		if err != nil || got != tt.want {
			t.Errorf("AddrNodeID(%q, %q) = %q, %v; want %q, nil", tt.network, tt.addr, got, err, tt.want)
		}
	}
}

func TestAddrNodeIDRejects(t *testing.T) {
	tests := []struct{ network, addr string }{
		{"tcp", "localhost"},
		{"tcp", ""},
		{"udp", "localhost:7001"},
		{"unix", ""},
	}
	for _, tt := range tests {
		if got, err := driver.AddrNodeID(tt.network, tt.addr); err == nil {
			t.Errorf("AddrNodeID(%q, %q) = %q, nil; want an error", tt.network, tt.addr, got)
		}
	}
}

func TestRunID(t *testing.T) {
	tests := []struct {
		name, info, want string
	}{
		{"INFO server", "# Server\r\nredis_version:7.0.15\r\nrun_id:0123abcd\r\ntcp_port:6379\r\n", "0123abcd"},
		{"last line without end", "# Server\nrun_id:0123abcd", "0123abcd"},
		{"no run_id", "# Server\r\nredis_version:7.0.15\r\n", ""},
		{"a field that only starts alike", "my_run_id:x\r\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := driver.RunID(tt.info); got != tt.want {
				t.Errorf("RunID(%q) = %q, want %q", tt.info, got, tt.want)
			}
		})
	}
}

func TestClientNodeID(t *testing.T) {
	type client struct{ _ int }
	a, b := new(client), new(client)
	if got, again := driver.ClientNodeID(a), driver.ClientNodeID(a); got != again {
		t.Errorf("ClientNodeID of one client = %q, then %q; want them equal", got, again)
	}
	if idA, idB := driver.ClientNodeID(a), driver.ClientNodeID(b); idA == idB {
		t.Errorf("ClientNodeID of two clients = %q and %q; want them different", idA, idB)
	}
	if id := driver.ClientNodeID(a); strings.Contains(id, "://") {
		t.Errorf("ClientNodeID = %q; want no address form", id)
	}
}
