package keytext

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("k", 100)
	// 63 ASCII bytes then a 3-byte character across the 64-byte mark.
	split := strings.Repeat("a", 63) + "€" + "tail"
	for _, tt := range []struct{ key, want string }{
		{"", `""`},
		{"order:42", `"order:42"`},
		{"new\nline", `"new\nline"`},
		{strings.Repeat("k", 64), `"` + strings.Repeat("k", 64) + `"`},
		{long, `"` + strings.Repeat("k", 64) + `..." (100 bytes)`},
		{split, `"` + strings.Repeat("a", 63) + `..." (70 bytes)`},
	} {
		if got := Quote(tt.key); got != tt.want {
			t.Errorf("Quote(%.80q) = %s, want %s", tt.key, got, tt.want)
		}
	}
}

func TestQuoteAll(t *testing.T) {
	for _, tt := range []struct {
		keys []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, `"a"`},
		{[]string{"a", "b"}, `"a", "b"`},
		{strings.Split("a b c d e f g h i j", " "), `"a", "b", "c", "d", "e", "f", "g", "h" and 2 more`},
	} {
		if got := QuoteAll(tt.keys); got != tt.want {
			t.Errorf("QuoteAll(%q) = %s, want %s", tt.keys, got, tt.want)
		}
	}
}
