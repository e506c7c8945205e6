package drivertest

import (
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// Skip skips exactly the rules it names: with every rule skipped, Run never
// asks for a Conn.
func TestSkipEveryRule(t *testing.T) {
	var opts []Option
	for _, r := range rules {
		opts = append(opts, Skip(r.name, "checking that Skip skips"))
	}
	Run(t, func(t *testing.T) driver.Conn {
		t.Fatal("Run asked for a Conn for a skipped rule")
		return nil
	}, opts...)
}

func TestRuleNamesAreUnique(t *testing.T) {
	seen := make(map[string]bool)
	for _, r := range rules {
		if seen[r.name] {
			t.Errorf("rule name %q appears twice", r.name)
		}
		seen[r.name] = true
	}
}
