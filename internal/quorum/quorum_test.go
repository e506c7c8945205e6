package quorum

import (
	"testing"
	"time"
)

func TestSize(t *testing.T) {
	tests := []struct{ nodes, want int }{
		{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4},
	}
	for _, tt := range tests {
		if got := Size(tt.nodes); got != tt.want {
			t.Errorf("Size(%d) = %d, want %d", tt.nodes, got, tt.want)
		}
	}
}

func TestDrift(t *testing.T) {
	tests := []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration
	}{
		{10 * time.Second, 0.01, 102 * time.Millisecond},
		{time.Second, 0.01, 12 * time.Millisecond},
		{100 * time.Millisecond, 0, 2 * time.Millisecond},
		{time.Second, 0.5, 502 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Drift(tt.ttl, tt.factor); got != tt.want {
			t.Errorf("Drift(%v, %v) = %v, want %v", tt.ttl, tt.factor, got, tt.want)
		}
	}
}

func TestValidityAndGranted(t *testing.T) {
	tests := []struct {
		name         string
		nodes, votes int
		ttl, elapsed time.Duration
		factor       float64
		wantValidity time.Duration
		wantGranted  bool
	}{
		{"all votes, fast", 5, 5, time.Second, 5 * time.Millisecond, 0.01, 983 * time.Millisecond, true},
		{"bare quorum", 5, 3, time.Second, 5 * time.Millisecond, 0.01, 983 * time.Millisecond, true},
		{"one short of quorum", 5, 2, time.Second, 5 * time.Millisecond, 0.01, 983 * time.Millisecond, false},
		{"even node count needs more than half", 4, 2, time.Second, 0, 0.01, 988 * time.Millisecond, false},
		{"single node", 1, 1, 100 * time.Millisecond, time.Millisecond, 0.01, 96 * time.Millisecond, true},
		{"quorum but round used the whole ttl", 3, 3, 100 * time.Millisecond, 97 * time.Millisecond, 0.01, 0, false},
		{"quorum but round overran the ttl", 3, 3, 100 * time.Millisecond, 150 * time.Millisecond, 0.01, -53 * time.Millisecond, false},
		{"validity of one nanosecond is enough", 3, 2, 100 * time.Millisecond, 97*time.Millisecond - 1, 0.01, 1, true},
		{"no votes", 3, 0, time.Second, 0, 0.01, 988 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			validity := Validity(tt.ttl, tt.elapsed, Drift(tt.ttl, tt.factor))
			if validity != tt.wantValidity {
				t.Errorf("validity = %v, want %v", validity, tt.wantValidity)
			}
			if got := Granted(tt.votes, tt.nodes, validity); got != tt.wantGranted {
				t.Errorf("Granted(%d, %d, %v) = %v, want %v", tt.votes, tt.nodes, validity, got, tt.wantGranted)
			}
		})
	}
}

func TestGone(t *testing.T) {
	tests := []struct {
		refused, nodes int
		want           bool
	}{
		{0, 1, false}, {1, 1, true},
		{1, 3, false}, {2, 3, true}, {3, 3, true},
		{2, 5, false}, {3, 5, true},
		{1, 4, false}, {2, 4, true},
	}
	for _, tt := range tests {
		if got := Gone(tt.refused, tt.nodes); got != tt.want {
			t.Errorf("Gone(%d, %d) = %v, want %v", tt.refused, tt.nodes, got, tt.want)
		}
	}
}
