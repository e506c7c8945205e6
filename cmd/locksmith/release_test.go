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
	if r := locksmith(t, nil, flag, "release", "a", "--value", "wrong-value-0123456789"); r.code != exitUnsafe {
		t.Errorf("release with the wrong value exited %d; want %d", r.code, exitUnsafe)
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
