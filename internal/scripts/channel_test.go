package scripts_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// The Release script publishes on the channel ReleaseChannel names, for
// every kind of key, a tag derived from the whole value, once per deleted
// key and never for a key it leaves or finds gone.
func TestReleasePublishesOnReleaseChannel(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"plain", "{plain}:released"},
		{"{order:42}:payment", "{order:42}:payment:released"},
		{"pre{tag}post", "pre{tag}post:released"},
		{"{}empty-tag", "{{}empty-tag}:released"},
		{"brace}only", "{brace}only}:released"},
		{"open{only", "{open{only}:released"},
		{"{{nested}}", "{{nested}}:released"},
	}
	s, _, n := newNode(t)
	sub := s.NewSubscriber()
	sub.Psubscribe("*")
	// The server blocks in PUBLISH until the message is read, so a
	// goroutine reads them all while the test runs scripts.
	messages := make(chan [2]string, len(tests)+1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Pmessages() {
			messages <- [2]string{m.Channel, m.Message}
		}
	}()
	defer func() {
		sub.Close()
		<-done
	}()
	// The values share their last characters, as those of a generator
	// that appends the host name do; their releases' tags must differ.
	tags := map[string]string{}
	for i, tt := range tests {
		if got := scripts.ReleaseChannel(tt.key); got != tt.want {
			t.Errorf("ReleaseChannel(%q) = %q, want %q", tt.key, got, tt.want)
		}
		value := fmt.Sprintf("%d-0123456789abcdef@web-host", i)
		run(t, n, scripts.Acquire, []string{tt.key}, value, "60000")
		// Another owner's release deletes nothing and publishes nothing.
		if got := run(t, n, scripts.Release, []string{tt.key}, "other"); got != int64(0) {
			t.Fatalf("release by another owner of %q = %v, want 0", tt.key, got)
		}
		if got := run(t, n, scripts.Release, []string{tt.key}, value); got != int64(1) {
			t.Fatalf("release of %q = %v, want 1", tt.key, got)
		}
		select {
		case m := <-messages:
			if want := releaseTag(value); m[0] != tt.want || m[1] != want {
				t.Errorf("release of %q published %q on %q, want %q on %q", tt.key, m[1], m[0], want, tt.want)
			}
			if other, ok := tags[m[1]]; ok {
				t.Errorf("releases of %q and %q published the same tag %q", other, value, m[1])
			}
			tags[m[1]] = value
		case <-time.After(10 * time.Second):
			t.Fatalf("release of %q published nothing", tt.key)
		}
		// Released again, as by a client that re-sends the command: the
		// key is gone, which counts, but nothing was deleted, so nothing
		// is published. A message from it would be the one the next
		// key's release finds first.
		if got := run(t, n, scripts.Release, []string{tt.key}, value); got != int64(1) {
			t.Fatalf("repeated release of %q = %v, want 1", tt.key, got)
		}
	}
	select {
	case m := <-messages:
		t.Errorf("unexpected message %q on %q", m[1], m[0])
	default:
	}
}

// releaseTag is the payload release.lua publishes for value, computed here
// to check the script against it.
func releaseTag(value string) string {
	sum := sha1.Sum([]byte(value))
	return hex.EncodeToString(sum[:])[:16]
}
