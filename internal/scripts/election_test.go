package scripts_test

import (
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// The keys and channels of an election "e" in these tests.
var (
	electionLock    = []string{"e", "{e}:fencing-token", "{e}:leader"}
	electionChanged = "{e}:leader-changed"
)

// An election's record is written only while the lock key holds the
// owner's value, lives no longer than it, and each script is idempotent:
// phase 2 applied again after a proclamation keeps it, an older
// proclamation applied after a newer one changes nothing, and a release
// applied twice deletes only what was the owner's.
func TestElectionScripts(t *testing.T) {
	s, _, n := newNode(t)
	lock, counter, record := electionLock[0], electionLock[1], electionLock[2]
	fence := func(value, term, identity string) any {
		return run(t, n, scripts.ElectionFence, electionLock, value, term, identity, electionChanged)
	}
	proclaim := func(value, identity, term, seq string) any {
		return run(t, n, scripts.ElectionProclaim, []string{lock, record}, value, identity, term, seq, electionChanged)
	}
	if got := fence("mine", "3", "a"); got != int64(0) {
		t.Fatalf("phase 2 without the lock key = %v, want 0", got)
	}
	if s.Exists(record) || s.Exists(counter) {
		t.Fatal("phase 2 without the lock key wrote something")
	}
	s.Set(lock, "mine")
	s.SetTTL(lock, 30*time.Second)
	if got := fence("mine", "3", "a"); got != int64(1) {
		t.Fatalf("phase 2 = %v, want 1", got)
	}
	if got, _ := s.Get(counter); got != "3" {
		t.Errorf("counter %q, want 3", got)
	}
	if ttl := s.TTL(record); ttl <= 0 || ttl > 30*time.Second {
		t.Errorf("record TTL %v, want the lock key's", ttl)
	}
	if got := proclaim("mine", "b", "3", "2"); got != int64(1) {
		t.Fatalf("proclamation = %v, want 1", got)
	}
	if got := proclaim("mine", "old", "3", "1"); got != int64(1) {
		t.Fatalf("an older proclamation applied late = %v, want 1", got)
	}
	if got := fence("mine", "3", "a"); got != int64(1) {
		t.Fatalf("phase 2 applied again = %v, want 1", got)
	}
	if got := s.HGet(record, "identity"); got != "b" {
		t.Errorf("identity %q after late requests, want the last proclamation's b", got)
	}
	if got := proclaim("theirs", "c", "3", "9"); got != int64(0) {
		t.Errorf("proclamation of another value = %v, want 0", got)
	}
	if got := s.HGet(record, "identity"); got != "b" {
		t.Errorf("identity %q after another value's proclamation, want b", got)
	}

	leader := run(t, n, scripts.ElectionLeader, []string{lock, record})
	r, ok := leader.([]any)
	if !ok || len(r) != 5 || r[2] != "b" || r[3] != "3" || r[4] != "2" {
		t.Errorf("leader = %#v, want b with term 3 and proclamation 2", leader)
	}

	release := func(value string) any {
		return run(t, n, scripts.ElectionRelease, []string{lock, record}, value, scripts.ReleaseChannel(lock), electionChanged)
	}
	if got := release("theirs"); got != int64(0) || !s.Exists(lock) || !s.Exists(record) {
		t.Errorf("release of another value = %v, want 0 and both keys kept", got)
	}
	for range 2 {
		if got := release("mine"); got != int64(1) {
			t.Errorf("release = %v, want 1", got)
		}
		if s.Exists(lock) || s.Exists(record) {
			t.Error("release left the lock key or the record")
		}
	}
	if got := run(t, n, scripts.ElectionLeader, []string{lock, record}); got != int64(0) {
		t.Errorf("leader after the release = %#v, want 0", got)
	}
	if got, _ := s.Get(counter); got != "3" {
		t.Errorf("counter %q after the release, want 3: it never goes back", got)
	}
}
