package drivertest

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// slotsForScriptLoad is how many keys in different hash slots
// testScriptLoad runs its script on. On a Redis Cluster of a few nodes, some
// of them are almost surely on a node other than the one a single SCRIPT
// LOAD would have reached.
const slotsForScriptLoad = 8

// testScriptLoad loads a script the server did not know, twice; the SHA-1
// is computed here only to check the digest.
func testScriptLoad(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)

	// The random comment makes the script new to the server, so EvalSha
	// can only succeed because of the ScriptLoad below.
	script := "-- drivertest " + rand.Text() + "\nreturn {'loaded', KEYS[1], ARGV[1]}"
	sum := sha1.Sum([]byte(script))
	wantDigest := hex.EncodeToString(sum[:])
	var keys []string
	for range slotsForScriptLoad {
		// Each keyspace has a hash tag of its own.
		keys = append(keys, newKeyspace(t, conn).key("script-load"))
	}
	args := []string{"arg"}

	if got, err := conn.EvalSha(t.Context(), wantDigest, keys[:1], args); !errors.Is(err, driver.ErrNoScript) {
		t.Fatalf("EvalSha before ScriptLoad = %s, %v; want an error matching driver.ErrNoScript", describe(got), err)
	}

	for _, attempt := range []string{"first ScriptLoad", "second ScriptLoad"} {
		digest, err := conn.ScriptLoad(t.Context(), script)
		if err != nil {
			t.Fatalf("%s error: %v", attempt, err)
		}
		if digest != wantDigest {
			t.Fatalf("%s = %q, want %q", attempt, digest, wantDigest)
		}
		for _, key := range keys {
			got, err := conn.EvalSha(t.Context(), digest, []string{key}, args)
			if err != nil {
				t.Fatalf("EvalSha(key %q) after %s error: %v", key, attempt, err)
			}
			want := []any{"loaded", key, "arg"}
			if !equalReply(got, want) {
				t.Errorf("EvalSha(key %q) after %s = %s, want %s", key, attempt, describe(got), describe(want))
			}
		}
	}
}

// keysAndArgsScript returns the keys and args it received, in order, after
// their counts.
const keysAndArgsScript = `return {#KEYS, #ARGV, KEYS, ARGV}`

func testKeysAndArgs(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	digest, err := conn.ScriptLoad(t.Context(), keysAndArgsScript)
	if err != nil {
		t.Fatalf("ScriptLoad error: %v", err)
	}

	var manyKeys, manyArgs []string
	for i := range 20 {
		manyKeys = append(manyKeys, ks.key(fmt.Sprintf("many-%02d", i)))
		manyArgs = append(manyArgs, fmt.Sprintf("arg-%02d", i))
	}
	threeKeys := []string{ks.key("c"), ks.key("a"), ks.key("b")}

	tests := []struct {
		name       string
		keys, args []string
	}{
		{name: "nil keys and args"},
		{name: "empty keys and args", keys: []string{}, args: []string{}},
		{name: "keys only", keys: threeKeys},
		{name: "args only", args: []string{"second", "first"}},
		{name: "keys and args", keys: threeKeys[:2], args: []string{"x", "y", "z"}},
		{name: "empty string args", keys: threeKeys[:1], args: []string{"", "middle", ""}},
		{name: "many keys and args", keys: manyKeys, args: manyArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := []any{int64(len(tt.keys)), int64(len(tt.args)), anySlice(tt.keys), anySlice(tt.args)}

			got, err := conn.Eval(t.Context(), keysAndArgsScript, tt.keys, tt.args)
			if err != nil {
				t.Fatalf("Eval error: %v", err)
			}
			if !equalReply(got, want) {
				t.Errorf("Eval(keys %q, args %q) = %s, want %s", tt.keys, tt.args, describe(got), describe(want))
			}

			got, err = conn.EvalSha(t.Context(), digest, tt.keys, tt.args)
			if err != nil {
				t.Fatalf("EvalSha error: %v", err)
			}
			if !equalReply(got, want) {
				t.Errorf("EvalSha(keys %q, args %q) = %s, want %s", tt.keys, tt.args, describe(got), describe(want))
			}
		})
	}
}

// anySlice converts strings to the []any an array reply of bulk strings
// normalizes to.
func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
