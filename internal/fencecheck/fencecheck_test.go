package fencecheck

import (
	"testing"
	"time"
)

func TestCheckFindsViolations(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name   string
		grants []Grant
		want   int
	}{
		{"increasing", []Grant{{at(0), at(1), 1}, {at(2), at(3), 2}, {at(4), at(5), 7}}, 0},
		{"overlapping grants may be in any order", []Grant{{at(0), at(5), 2}, {at(1), at(6), 1}}, 0},
		{"smaller token after", []Grant{{at(0), at(1), 5}, {at(2), at(3), 4}}, 1},
		{"smaller token after a later-ending grant", []Grant{{at(0), at(1), 9}, {at(0), at(3), 2}, {at(4), at(5), 3}}, 1},
		{"equal token after", []Grant{{at(0), at(1), 5}, {at(2), at(3), 5}}, 2}, // P1 and P2
		{"duplicate among overlapping", []Grant{{at(0), at(5), 3}, {at(1), at(6), 3}}, 1},
	}
	for _, tt := range tests {
		if got := Check(tt.grants); len(got) != tt.want {
			t.Errorf("%s: violations %v, want %d", tt.name, got, tt.want)
		}
	}
}
