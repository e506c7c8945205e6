package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRelease(t *testing.T) {
	servers, flag := nodes(t, 3)
	ctx := context.Background()
	const value = "crashed-owner-value-0123456789"
	set := func(key string) {
		for _, s := range servers {
			if err := rdb(t, s).Set(ctx, key, value, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	set("a")
	for _, wrong := range []string{"wrong-value-0123456789", "WRONG"} {
		// A node slower than its timeout would count as failed, not
		// refusing; the timeout is far beyond a loaded machine's delays.
		r := locksmith(t, nil, flag, "--node-timeout", "2s", "release", "a", "--value", wrong)
		if r.code != exitUnsafe {
			t.Errorf("release with the wrong value %q exited %d; want %d", wrong, r.code, exitUnsafe)
		}
		if want := `locksmith: not released: the value given does not hold the lock on "a"`; !strings.Contains(r.stderr, want) {
			t.Errorf("release with the wrong value %q: stderr %q; want it to say %q", wrong, r.stderr, want)
		}
		for _, leak := range []string{wrong[:4], "extend", "with value"} {
			if strings.Contains(r.stderr, leak) {
				t.Errorf("release with the wrong value %q: stderr %q shows %q", wrong, r.stderr, leak)
			}
		}
	}
	if n := holders(t, servers, "a"); n != 3 {
		t.Errorf("a release with the wrong value left %d holders; want 3", n)
	}
	r := locksmith(t, nil, flag, "release", "a", "--value", value)
	if r.code != 0 || holders(t, servers, "a") != 0 {
		t.Errorf("release --value: exit %d, %d holders left; want 0, 0; stderr: %s", r.code, holders(t, servers, "a"), r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("release shows the whole value: %s %s", r.stdout, r.stderr)
	}

	set("b")
	file := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(file, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := locksmith(t, nil, flag, "release", "b", "--value-file", file); r.code != 0 || holders(t, servers, "b") != 0 {
		t.Errorf("release --value-file: exit %d; stderr: %s", r.code, r.stderr)
	}

	set("c")
	for _, args := range [][]string{{"--force"}, {"--force", "--confirm", "other"}} {
		r := locksmith(t, nil, append([]string{flag, "release", "c"}, args...)...)
		if r.code != exitUsage || holders(t, servers, "c") != 3 {
			t.Errorf("release %v: exit %d, %d holders; want %d, 3", args, r.code, holders(t, servers, "c"), exitUsage)
		}
	}
	r = locksmith(t, nil, flag, "release", "c", "--force", "--confirm", "c")
	if r.code != 0 || holders(t, servers, "c") != 0 {
		t.Errorf("release --force --confirm: exit %d, %d holders; want 0, 0; stderr: %s", r.code, holders(t, servers, "c"), r.stderr)
	}
	if n := strings.Count(r.stdout, `deleted "c", value `+value[:4]+"…"); n != 3 {
		t.Errorf("release --force reported %d deletions; want 3: %s", n, r.stdout)
	}
}

// TestReleaseUnreachable releases with a value while no node answers:
// that is an infrastructure failure, not a value that does not hold the
// lock.
func TestReleaseUnreachable(t *testing.T) {
	closed := "--nodes=redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	r := locksmith(t, nil, closed, "release", "a", "--value", "some-value-0123456789")
	if r.code != exitError {
		t.Errorf("release with no node answering exited %d; want %d; stderr: %s", r.code, exitError, r.stderr)
	}
	if strings.Contains(r.stderr, "does not hold") || strings.Contains(r.stderr, "some") {
		t.Errorf("release with no node answering: stderr %q blames the value or shows it", r.stderr)
	}
}
