package redlock

import (
	"errors"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/faults"
)

// A node is failing once failLimit of its requests in a row have failed:
// it is then due one probe per interval after its last failure, and a
// success ends it. Failures with a success among them do not add up, nor
// does a CROSSSLOT refusal, the caller's mistake.
func TestNodeFailures(t *testing.T) {
	const interval = time.Second
	clock := faults.NewClock(time.Unix(1_000_000, 0))
	f := newNodeFailures(3)
	f.now = clock.Now
	refused := errors.New("connection refused")
	fail := false   // node 2's next request fails
	run := func() { // one request to each node
		for node := range 3 {
			var err error
			if node == 2 && fail {
				err = refused
			}
			f.Ended(node, err, interval)
		}
	}
	failing := func() bool { return f.failing(2, interval) }

	fail = true
	for range failLimit - 1 {
		run()
	}
	fail = false
	run() // a success: the failures so far no longer count
	fail = true
	for i := range failLimit {
		if failing() {
			t.Fatalf("node 2 failing after %d failures in a row", i)
		}
		run()
	}
	if !failing() {
		t.Fatalf("node 2 not failing after %d failures in a row", failLimit)
	}
	if f.failing(0, interval) || f.failing(1, interval) {
		t.Error("a node whose requests succeed is failing")
	}
	clock.Advance(interval)
	if !failing() {
		t.Error("node 2 due a probe exactly one interval after its last failure")
	}
	clock.Advance(time.Millisecond)
	if failing() {
		t.Fatal("node 2 not due a probe once the interval has passed")
	}
	if !failing() {
		t.Error("node 2 due a second probe right after the first")
	}
	clock.Advance(interval / 2)
	run() // the probe fails: the next one is an interval after it
	clock.Advance(interval/2 + time.Millisecond)
	if !failing() {
		t.Error("node 2 due a probe an interval after the last one was sent, half an interval after it failed")
	}
	clock.Advance(interval / 2)
	if failing() {
		t.Fatal("node 2 not due a probe an interval after a failed one")
	}
	fail = false
	run() // the probe succeeds
	if failing() {
		t.Error("node 2 still failing after a success")
	}

	// However long the requests' timeout, a failing node is due a probe a
	// second after its last failure.
	for range failLimit {
		f.Ended(2, refused, time.Hour)
	}
	if !f.failing(2, time.Hour) {
		t.Fatal("node 2 not failing again")
	}
	clock.Advance(time.Second + time.Millisecond)
	if f.failing(2, time.Hour) {
		t.Error("node 2, with a timeout of an hour, not due a probe a second after its last failure")
	}

	mistake := errors.New("CROSSSLOT Keys in request don't hash to the same slot")
	for range failLimit {
		f.Ended(0, mistake, time.Hour)
	}
	if f.failed(0) {
		t.Error("node 0 failing after CROSSSLOT refusals, which are not its fault")
	}
}
