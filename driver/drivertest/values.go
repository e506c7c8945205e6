package drivertest

import (
	"crypto/rand"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// echoScript returns its first argument unchanged.
const echoScript = `return ARGV[1]`

// storeScript stores ARGV[1] under KEYS[1], reads it back and returns what
// the server stored, its length as the server counts it, and the key name.
const storeScript = `
redis.call('SET', KEYS[1], ARGV[1])
local stored = redis.call('GET', KEYS[1])
return {stored, string.len(stored), KEYS[1]}`

// testBinaryValues also sends bytes that look like protocol framing.
func testBinaryValues(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	tests := []struct {
		name  string
		value string
	}{
		{name: "every byte value", value: string(allBytes)},
		{name: "only NUL", value: "\x00"},
		{name: "embedded NUL", value: "before\x00after"},
		{name: "invalid UTF-8", value: "\xff\xfe\xc3\x28\xa0\xa1"},
		{name: "protocol framing", value: "$3\r\nfoo\r\n*1\r\n:1\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRoundTrip(t, conn, ks.key("binary\x00\xff-"+tt.name), tt.value)
		})
	}
}

// testLargeValue: clients buffer large replies differently from small ones.
func testLargeValue(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	value := make([]byte, 1<<20)
	rand.Read(value)
	checkRoundTrip(t, conn, ks.key("large"), string(value))
}

// checkRoundTrip sends value to the server in ARGV and checks that it comes
// back unchanged as a reply, as an element of an array reply, and after being
// stored under key.
func checkRoundTrip(t *testing.T, conn driver.Conn, key, value string) {
	t.Helper()
	got, err := conn.Eval(t.Context(), echoScript, nil, []string{value})
	if err != nil {
		t.Fatalf("Eval(echo) error: %v", err)
	}
	if !equalReply(got, value) {
		t.Errorf("Eval(echo) = %s, want %s", describe(got), describe(value))
	}

	got, err = conn.Eval(t.Context(), storeScript, []string{key}, []string{value})
	if err != nil {
		t.Fatalf("Eval(store) error: %v", err)
	}
	want := []any{value, int64(len(value)), key}
	if !equalReply(got, want) {
		t.Errorf("Eval(store) = %s, want %s", describe(got), describe(want))
	}
}
