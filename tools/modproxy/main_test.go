package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeRepo writes files (path to content) under a new directory and
// returns it with the list of paths.
func writeRepo(t *testing.T, files map[string]string) (string, []string) {
	t.Helper()
	root := t.TempDir()
	var names []string
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return root, names
}

// repo is a root module with an internal package and an adapter module
// that imports it, with the adapter's go.mod and README given.
func repo(adapterGoMod, readme string) map[string]string {
	return map[string]string{
		"go.mod":                  "module example.com/lib\n\ngo 1.26.0\n",
		"README.md":               readme,
		"internal/x/x.go":         "package x\n",
		"adapter/go.mod":          adapterGoMod,
		"adapter/adapter.go":      "package adapter\n\nimport _ \"example.com/lib/internal/x\"\n",
		"adapter/internal/y/y.go": "package y\n",
	}
}

const readme = "Needs Go 1.26 or later.\n"

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gomod  string
		readme string
		want   []string // substrings of the error; none: no error
	}{
		{
			name:   "lockstep",
			gomod:  "module example.com/lib/adapter\n\ngo 1.26.0\n\nrequire example.com/lib v0.1.0\n\nreplace example.com/lib => ../\n",
			readme: readme,
		},
		{
			name:   "pseudo-version",
			gomod:  "module example.com/lib/adapter\n\ngo 1.26.0\n\nrequire example.com/lib v0.0.0-00010101000000-000000000000\n",
			readme: readme,
			want: []string{
				"adapter/go.mod: requires example.com/lib v0.0.0-00010101000000-000000000000, want v0.1.0",
				"imports internal packages of example.com/lib, so it must require it at v0.1.0",
			},
		},
		{
			name:   "internal without requirement",
			gomod:  "module example.com/lib/adapter\n\ngo 1.26.0\n",
			readme: readme,
			want:   []string{"adapter/go.mod: imports internal packages of example.com/lib but does not require it"},
		},
		{
			name:   "sibling that does not exist",
			gomod:  "module example.com/lib/adapter\n\ngo 1.26.0\n\nrequire (\n\texample.com/lib v0.1.0\n\texample.com/lib/gone v0.1.0\n)\n",
			readme: readme,
			want:   []string{"requires example.com/lib/gone, which is no module of this repository"},
		},
		{
			name:   "go version differs",
			gomod:  "module example.com/lib/adapter\n\ngo 1.25.0\n\nrequire example.com/lib v0.1.0\n",
			readme: readme,
			want:   []string{"adapter/go.mod: go 1.25.0, want go 1.26.0"},
		},
		{
			name:   "README states another version",
			gomod:  "module example.com/lib/adapter\n\ngo 1.26.0\n\nrequire example.com/lib v0.1.0\n",
			readme: "Needs Go 1.25 or later.\n",
			want:   []string{`README.md: does not say "Go 1.26 or later"`},
		},
		{
			name:   "module path not its directory",
			gomod:  "module example.com/other\n\ngo 1.26.0\n\nrequire example.com/lib v0.1.0\n",
			readme: readme,
			want:   []string{"adapter/go.mod: module example.com/other, want example.com/lib/adapter"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, files := writeRepo(t, repo(tc.gomod, tc.readme))
			mods, err := loadModules(root, files)
			if err != nil {
				t.Fatalf("loadModules: %v", err)
			}
			var msgs []string
			for _, err := range check(root, mods, "v0.1.0") {
				msgs = append(msgs, err.Error())
			}
			got := strings.Join(msgs, "\n")
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("check: got errors\n%s\nwant none", got)
			}
			if len(tc.want) > 0 && got == "" {
				t.Fatalf("check: got no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("check: got\n%s\nwant an error containing %q", got, w)
				}
			}
		})
	}
}

// TestOwner checks that a file belongs to the innermost module around it
// and that the adapter's own internal package is not another module's.
func TestOwner(t *testing.T) {
	root, files := writeRepo(t, repo("module example.com/lib/adapter\n\ngo 1.26.0\n\nrequire example.com/lib v0.1.0\n", readme))
	mods, err := loadModules(root, files)
	if err != nil {
		t.Fatalf("loadModules: %v", err)
	}
	for name, want := range map[string]string{
		"internal/x/x.go":         ".",
		"adapter/adapter.go":      "adapter",
		"adapter/internal/y/y.go": "adapter",
		"adapterx/z.go":           ".",
	} {
		if got := owner(mods, name).dir; got != want {
			t.Errorf("owner(%s): got %s, want %s", name, got, want)
		}
	}
}
