package drivertest

import (
	"fmt"
	"strconv"
	"strings"
)

// equalReply reports whether got is exactly the normalized reply want: the
// same Go types (int64, string, []any, nil) holding the same values. A nil
// []any and an empty one are equal, as both are an empty array.
func equalReply(got, want any) bool {
	switch want := want.(type) {
	case nil:
		return got == nil
	case int64:
		g, ok := got.(int64)
		return ok && g == want
	case string:
		g, ok := got.(string)
		return ok && g == want
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(want) {
			return false
		}
		for i := range want {
			if !equalReply(g[i], want[i]) {
				return false
			}
		}
		return true
	default:
		panic(fmt.Sprintf("drivertest: want reply of unsupported type %T", want))
	}
}

// describe renders a reply with the Go type of every element, so a failure
// message tells int64(1) from "1" and from int(1).
func describe(v any) string {
	var b strings.Builder
	describeTo(&b, v)
	return b.String()
}

// maxDescribedString keeps failure messages readable when a large value
// comes back wrong.
const maxDescribedString = 64

func describeTo(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case int64:
		fmt.Fprintf(b, "int64(%d)", v)
	case string:
		if len(v) > maxDescribedString {
			fmt.Fprintf(b, "%s... (%d bytes)", strconv.Quote(v[:maxDescribedString]), len(v))
			return
		}
		b.WriteString(strconv.Quote(v))
	case []any:
		b.WriteString("[]any{")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			describeTo(b, e)
		}
		b.WriteString("}")
	default:
		fmt.Fprintf(b, "%T(%#v)", v, v)
	}
}
