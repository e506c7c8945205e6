// Package keytext quotes Redis keys and resource names for error messages.
// Keys have no size limit, error messages must stay short: every package
// that names a key in an error goes through Quote or QuoteAll.
package keytext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A message shows at most MaxKeys keys, each cut after MaxBytes bytes.
const (
	MaxBytes = 64
	MaxKeys  = 8
)

// Quote returns key quoted as by strconv.Quote. A key longer than MaxBytes
// is cut, at a character boundary, and followed by its length:
// "first bytes..." (N bytes).
func Quote(key string) string {
	if len(key) <= MaxBytes {
		return strconv.Quote(key)
	}
	n := MaxBytes
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return strconv.Quote(key[:n]+"...") + " (" + strconv.Itoa(len(key)) + " bytes)"
}

// QuoteAll returns the first MaxKeys of keys, each quoted with Quote,
// separated by commas and followed by how many more there are.
func QuoteAll(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		if i == MaxKeys {
			fmt.Fprintf(&b, " and %d more", len(keys)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(k))
	}
	return b.String()
}
