package drivertest

import (
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// testReplyTypes: Lua's false becomes a nil reply and Lua's true the integer
// 1 on the server, so they are an easy way to get those replies.
func testReplyTypes(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	tests := []struct {
		name    string
		script  string
		withKey bool // pass one fresh key as KEYS[1]
		args    []string
		want    any
	}{
		{name: "integer", script: `return 42`, want: int64(42)},
		{name: "negative integer", script: `return -7`, want: int64(-7)},
		{name: "zero", script: `return 0`, want: int64(0)},
		{
			name:   "integer beyond 32 bits",
			script: `return tonumber(ARGV[1])`,
			args:   []string{"9007199254740991"}, // 2^53-1, exact in a Lua number
			want:   int64(9007199254740991),
		},
		{name: "Lua true is integer 1", script: `return true`, want: int64(1)},
		{name: "bulk string", script: `return 'hello'`, want: "hello"},
		{name: "numeric bulk string stays a string", script: `return '42'`, want: "42"},
		{name: "empty bulk string", script: `return ''`, want: ""},
		{name: "status reply", script: `return redis.status_reply('FINE')`, want: "FINE"},
		{name: "status table", script: `return {ok = 'DONE'}`, want: "DONE"},
		{
			name:    "status reply of a command",
			script:  `return redis.call('SET', KEYS[1], 'value')`,
			withKey: true,
			want:    "OK",
		},
		{name: "nil", script: `return nil`, want: nil},
		{name: "Lua false is nil", script: `return false`, want: nil},
		{
			name:    "nil bulk string of a command",
			script:  `return redis.call('GET', KEYS[1])`,
			withKey: true,
			want:    nil,
		},
		{name: "array", script: `return {1, 'two', 3}`, want: []any{int64(1), "two", int64(3)}},
		{
			name:   "nested arrays",
			script: `return {1, {'a', {2, {}}}, 'b'}`,
			want:   []any{int64(1), []any{"a", []any{int64(2), []any{}}}, "b"},
		},
		{
			name:   "nil inside an array",
			script: `return {1, false, 'three'}`,
			want:   []any{int64(1), nil, "three"},
		},
		{
			name:   "nil inside nested arrays",
			script: `return {{false}, {false, 2}}`,
			want:   []any{[]any{nil}, []any{nil, int64(2)}},
		},
		{
			name:   "status and empty string inside an array",
			script: `return {redis.status_reply('OK'), ''}`,
			want:   []any{"OK", ""},
		},
		{name: "empty array", script: `return {}`, want: []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys []string
			if tt.withKey {
				keys = []string{ks.key(tt.name)}
			}
			got, err := conn.Eval(t.Context(), tt.script, keys, tt.args)
			if err != nil {
				t.Fatalf("Eval(%q) error: %v", tt.script, err)
			}
			if !equalReply(got, tt.want) {
				t.Errorf("Eval(%q) = %s, want %s", tt.script, describe(got), describe(tt.want))
			}
		})
	}
}
