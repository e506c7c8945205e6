package faultproxy

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func TestScheduleNext(t *testing.T) {
	tests := []struct {
		name     string
		due      []time.Duration // queued waiters
		now      time.Duration
		wantAct  action
		wantTime time.Duration
	}{
		{"empty", nil, 0, idle, 0},
		{"far off: sleep to spinWindow before", []time.Duration{50 * ms}, 0, sleep, 50*ms - spinWindow},
		{"just far enough for minSleep", []time.Duration{spinWindow + minSleep}, 0, sleep, minSleep},
		{"a sleep would be shorter than minSleep", []time.Duration{spinWindow + minSleep - time.Microsecond}, 0, spin, 0},
		{"the benchmark's 250µs", []time.Duration{10*ms + 250*time.Microsecond}, 10 * ms, spin, 0},
		{"the earliest decides", []time.Duration{50 * ms, 100 * time.Microsecond, 20 * ms}, 0, spin, 0},
		{"measured from now", []time.Duration{50 * ms}, 40 * ms, sleep, 10*ms - spinWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s schedule
			for _, due := range tt.due {
				s.add(due, make(chan struct{}, 1))
			}
			act, d := s.next(tt.now)
			if act != tt.wantAct || d != tt.wantTime {
				t.Errorf("next(%v) = %v, %v; want %v, %v", tt.now, act, d, tt.wantAct, tt.wantTime)
			}
		})
	}
}

// TestSchedulePopDue checks that waiters are released no earlier than their
// due time, earliest first and, at equal times, in the order they came.
func TestSchedulePopDue(t *testing.T) {
	var s schedule
	dues := []time.Duration{5 * ms, 1 * ms, 3 * ms, 1 * ms, 9 * ms, 3 * ms, 0}
	names := make(map[chan<- struct{}]int)
	for i, due := range dues {
		ready := make(chan struct{}, 1)
		names[ready] = i
		s.add(due, ready)
	}
	pop := func(now time.Duration) []int {
		var got []int
		for {
			w, ok := s.popDue(now)
			if !ok {
				return got
			}
			if w.due > now {
				t.Errorf("popDue(%v) released a waiter due at %v", now, w.due)
			}
			got = append(got, names[w.ready])
		}
	}
	steps := []struct {
		now  time.Duration
		want []int // indexes into dues
	}{
		{0, []int{6}},
		{ms - 1, nil},
		{ms, []int{1, 3}},
		{4 * ms, []int{2, 5}},
		{9 * ms, []int{0, 4}},
		{time.Hour, nil},
	}
	for _, step := range steps {
		if got := pop(step.now); !equal(got, step.want) {
			t.Errorf("popDue up to %v released %v; want %v", step.now, got, step.want)
		}
	}
	if act, _ := s.next(time.Hour); act != idle {
		t.Errorf("next on an empty schedule = %v; want idle", act)
	}
}

func TestScheduleAddReportsEarliest(t *testing.T) {
	var s schedule
	ready := make(chan struct{}, 1)
	steps := []struct {
		due  time.Duration
		want bool
	}{
		{5 * ms, true},
		{7 * ms, false},
		{5 * ms, false}, // a tie goes after the waiter already queued
		{2 * ms, true},
	}
	for _, step := range steps {
		if got := s.add(step.due, ready); got != step.want {
			t.Errorf("add(%v) reported earliest %v; want %v", step.due, got, step.want)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
