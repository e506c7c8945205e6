package drivertest

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// testErrorReplies: callers answer ErrNoScript by sending the script again,
// which must not happen for a script that simply failed.
func testErrorReplies(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	tests := []struct {
		name   string
		script string
		// marker is text the error must contain; empty when the
		// server words the message itself.
		marker string
	}{
		{
			name:   "redis.error_reply",
			script: `return redis.error_reply('DRIVERTEST error reply')`,
			marker: "DRIVERTEST error reply",
		},
		{
			name:   "error table",
			script: `return {err = 'DRIVERTEST error table'}`,
			marker: "DRIVERTEST error table",
		},
		{
			name:   "Lua runtime error",
			script: `error('DRIVERTEST runtime error')`,
			marker: "DRIVERTEST runtime error",
		},
		{
			name:   "failing redis.call",
			script: `redis.call('SET', KEYS[1], 'not a number') return redis.call('INCR', KEYS[1])`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := []string{ks.key(tt.name)}
			got, err := conn.Eval(t.Context(), tt.script, keys, nil)
			checkErrorReply(t, "Eval", got, err, tt.marker)

			digest, err := conn.ScriptLoad(t.Context(), tt.script)
			if err != nil {
				t.Fatalf("ScriptLoad error: %v", err)
			}
			got, err = conn.EvalSha(t.Context(), digest, keys, nil)
			checkErrorReply(t, "EvalSha", got, err, tt.marker)
		})
	}

	t.Run("script that does not compile", func(t *testing.T) {
		const script = `return (`
		got, err := conn.Eval(t.Context(), script, nil, nil)
		checkErrorReply(t, "Eval", got, err, "")
		digest, err := conn.ScriptLoad(t.Context(), script)
		if err == nil {
			t.Errorf("ScriptLoad(%q) = %q, nil; want an error", script, digest)
		}
		if errors.Is(err, driver.ErrNoScript) {
			t.Errorf("ScriptLoad(%q) error %q matches driver.ErrNoScript; want a compile error", script, err)
		}
	})
}

// checkErrorReply checks the error of a call that the server answered with
// an error reply.
func checkErrorReply(t *testing.T, method string, got any, err error, marker string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = %s, nil; want an error", method, describe(got))
		return
	}
	if errors.Is(err, driver.ErrNoScript) {
		t.Errorf("%s error %q matches driver.ErrNoScript; want it not to, the script exists", method, err)
	}
	if !strings.Contains(err.Error(), marker) {
		t.Errorf("%s error %q does not contain the server's message %q", method, err, marker)
	}
}

// testUnknownDigest: that error is how callers learn to fall back to Eval.
func testUnknownDigest(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	// A script no one has loaded: its source holds a fresh random string.
	neverLoaded := "return 'drivertest " + rand.Text() + "'"
	sum := sha1.Sum([]byte(neverLoaded))
	digest := hex.EncodeToString(sum[:])

	tests := []struct {
		name string
		keys []string
		args []string
	}{
		{name: "no keys or args"},
		{name: "keys and args", keys: []string{ks.key("unknown-digest")}, args: []string{"arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := conn.EvalSha(t.Context(), digest, tt.keys, tt.args)
			if !errors.Is(err, driver.ErrNoScript) {
				t.Errorf("EvalSha(unknown digest) = %s, %v; want an error matching driver.ErrNoScript", describe(got), err)
			}
		})
	}
}
