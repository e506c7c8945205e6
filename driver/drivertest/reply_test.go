package drivertest

import "testing"

func TestEqualReply(t *testing.T) {
	tests := []struct {
		name      string
		got, want any
		equal     bool
	}{
		{"same int64", int64(1), int64(1), true},
		{"int is not int64", 1, int64(1), false},
		{"numeric string is not int64", "1", int64(1), false},
		{"same string", "a", "a", true},
		{"[]byte is not string", []byte("a"), "a", false},
		{"nil", nil, nil, true},
		{"empty string is not nil", "", nil, false},
		{"nil and empty array are equal", []any(nil), []any{}, true},
		{"nested", []any{int64(1), []any{nil, "x"}}, []any{int64(1), []any{nil, "x"}}, true},
		{"nested nil differs from empty string", []any{""}, []any{nil}, false},
		{"longer array", []any{int64(1), int64(2)}, []any{int64(1)}, false},
		{"[]string is not []any", []string{"a"}, []any{"a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := equalReply(tt.got, tt.want); got != tt.equal {
				t.Errorf("equalReply(%s, %s) = %v, want %v", describe(tt.got), describe(tt.want), got, tt.equal)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		reply any
		want  string
	}{
		{nil, "nil"},
		{int64(7), "int64(7)"},
		{"a\x00b", `"a\x00b"`},
		{[]any{int64(1), nil, []any{}}, "[]any{int64(1), nil, []any{}}"},
		{7, "int(7)"},
		{[]byte("x"), `[]uint8([]byte{0x78})`},
	}
	for _, tt := range tests {
		if got := describe(tt.reply); got != tt.want {
			t.Errorf("describe(%#v) = %s, want %s", tt.reply, got, tt.want)
		}
	}
}
