// Command modproxy checks that the modules of the repository can be released
// together at one version, and writes a module proxy on the local file system
// that serves every module at that version, made from the working tree as if
// the version were tagged.
//
// Usage:
//
//	modproxy -repo DIR -version v0.1.0 [-out PROXYDIR] [-dropreplace DIR,...]
//
// The checks, each reported with the go.mod it concerns:
//
//   - every requirement of a module of the repository names the release
//     version, since all modules are tagged at once;
//   - a module that imports an internal package of another module of the
//     repository requires that module (directly or as indirect), at the
//     release version: internal packages have no compatibility promise, so
//     the two only compile together at the same release;
//   - every go.mod states the same go version, and README.md states it as
//     the minimum.
//
// With -out, PROXYDIR receives, for every module, the files a module proxy
// serves (@v/list, .info, .mod and .zip), so that GOPROXY=file://PROXYDIR
// resolves the modules without the replace lines of the repository. The zips
// hold the files git tracks or would track (untracked files that .gitignore
// does not exclude), as they are in the working tree. The modules named by
// -dropreplace (directories, comma-separated) are served with a go.mod
// without the replace lines for their siblings, as RELEASING.md tags them:
// `go install pkg@version` refuses a module with replace lines.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "root directory of the repository")
	version := flag.String("version", "", "the release version, e.g. v0.1.0")
	out := flag.String("out", "", "directory to write the module proxy into (none: only check)")
	drop := flag.String("dropreplace", "", "comma-separated module directories served without replace lines")
	flag.Parse()
	var dropDirs []string
	if *drop != "" {
		dropDirs = strings.Split(*drop, ",")
	}
	if err := run(*repo, *version, *out, dropDirs); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

// A repoModule is one module of the repository.
type repoModule struct {
	dir   string // relative to the repository root, "." for the root module
	file  *modfile.File
	gomod []byte
	files []string // every file under dir, relative to the repository root
}

func (m *repoModule) path() string { return m.file.Module.Mod.Path }

func run(repo, version, out string, dropDirs []string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("-version %q is not a canonical semantic version", version)
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	files, err := gitFiles(root)
	if err != nil {
		return err
	}
	mods, err := loadModules(root, files)
	if err != nil {
		return err
	}
	if errs := check(root, mods, version); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if out == "" {
		return nil
	}
	stamp, err := commitTime(root)
	if err != nil {
		return err
	}
	for _, dir := range dropDirs {
		m := byDir(mods, dir)
		if m == nil {
			return fmt.Errorf("-dropreplace %s: no module in that directory", dir)
		}
		if err := dropReplace(m, mods[0].path()); err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, "go.mod"), err)
		}
	}
	for _, m := range mods {
		if err := writeModule(root, out, m, version, stamp); err != nil {
			return fmt.Errorf("%s: %w", m.path(), err)
		}
	}
	return nil
}

// gitFiles lists the files of the working tree that git tracks or would
// track, relative to root, with slashes.
func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var files []string
	seen := make(map[string]bool)
	for _, name := range strings.Split(string(outb), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted in the working tree
			}
			return nil, err
		}
		if info.Mode().IsRegular() {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	return files, nil
}

func loadModules(root string, files []string) ([]*repoModule, error) {
	var mods []*repoModule
	for _, name := range files {
		if path.Base(name) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s: no module line", name)
		}
		mods = append(mods, &repoModule{dir: path.Dir(name), file: f, gomod: data})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].dir == "." || (mods[j].dir != "." && mods[i].dir < mods[j].dir) })
	if len(mods) == 0 || mods[0].dir != "." {
		return nil, errors.New("no go.mod at the repository root")
	}
	for _, name := range files {
		if m := owner(mods, name); m != nil {
			m.files = append(m.files, name)
		}
	}
	return mods, nil
}

func byDir(mods []*repoModule, dir string) *repoModule {
	dir = path.Clean(dir)
	for _, m := range mods {
		if m.dir == dir {
			return m
		}
	}
	return nil
}

// dropReplace removes from m's go.mod the replace lines of the modules
// below rootPath; the file served for m is then the edited one.
func dropReplace(m *repoModule, rootPath string) error {
	f, err := modfile.Parse("go.mod", m.gomod, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Replace {
		if r.Old.Path == rootPath || strings.HasPrefix(r.Old.Path, rootPath+"/") {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	f.Cleanup()
	data, err := f.Format()
	if err != nil {
		return err
	}
	m.gomod = data
	return nil
}

// owner returns the module whose directory holds the file name: the one
// with the longest directory that contains it.
func owner(mods []*repoModule, name string) *repoModule {
	return longest(mods, name, func(m *repoModule) string { return m.dir })
}

// providing returns the module of the repository that holds the package
// path p, or nil.
func providing(mods []*repoModule, p string) *repoModule {
	return longest(mods, p, (*repoModule).path)
}

// longest returns the module m whose key(m) is the longest that is p or a
// parent path of p, "." standing for every path; nil when there is none.
func longest(mods []*repoModule, p string, key func(*repoModule) string) *repoModule {
	var best *repoModule
	for _, m := range mods {
		k := key(m)
		if k == "." || p == k || strings.HasPrefix(p, k+"/") {
			if best == nil || len(k) > len(key(best)) {
				best = m
			}
		}
	}
	return best
}

func check(root string, mods []*repoModule, version string) []error {
	byPath := make(map[string]*repoModule)
	for _, m := range mods {
		byPath[m.path()] = m
	}
	rootPath := mods[0].path()
	isOurs := func(p string) bool { return p == rootPath || strings.HasPrefix(p, rootPath+"/") }

	var errs []error
	for _, m := range mods {
		gomod := path.Join(m.dir, "go.mod")
		want := rootPath
		if m.dir != "." {
			want = rootPath + "/" + m.dir
		}
		if m.path() != want {
			errs = append(errs, fmt.Errorf("%s: module %s, want %s (the path of its directory)", gomod, m.path(), want))
		}
		required := make(map[string]string)
		for _, r := range m.file.Require {
			if !isOurs(r.Mod.Path) {
				continue
			}
			required[r.Mod.Path] = r.Mod.Version
			switch {
			case byPath[r.Mod.Path] == nil:
				errs = append(errs, fmt.Errorf("%s: requires %s, which is no module of this repository", gomod, r.Mod.Path))
			case r.Mod.Version != version:
				errs = append(errs, fmt.Errorf("%s: requires %s %s, want %s: every module is released at once", gomod, r.Mod.Path, r.Mod.Version, version))
			}
		}
		imported, err := internalImports(root, m, mods)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, dep := range imported {
			if v, ok := required[dep]; !ok {
				errs = append(errs, fmt.Errorf("%s: imports internal packages of %s but does not require it at %s", gomod, dep, version))
			} else if v != version {
				errs = append(errs, fmt.Errorf("%s: imports internal packages of %s, so it must require it at %s, not %s", gomod, dep, version, v))
			}
		}
	}
	errs = append(errs, checkGoVersion(root, mods)...)
	return errs
}

// internalImports returns the other modules of the repository whose internal
// packages the Go files of m import, tests included.
func internalImports(root string, m *repoModule, mods []*repoModule) ([]string, error) {
	found := make(map[string]bool)
	fset := token.NewFileSet()
	for _, name := range m.files {
		if !strings.HasSuffix(name, ".go") || slices.Contains(strings.Split(name, "/"), "testdata") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(name)), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return nil, err
			}
			i := strings.Index(p+"/", "/internal/")
			if i < 0 {
				continue
			}
			if dep := providing(mods, p[:i]); dep != nil && dep != m {
				found[dep.path()] = true
			}
		}
	}
	var deps []string
	for p := range found {
		deps = append(deps, p)
	}
	sort.Strings(deps)
	return deps, nil
}

// checkGoVersion requires one go version in every go.mod, stated in
// README.md as "Go X.Y or later".
func checkGoVersion(root string, mods []*repoModule) []error {
	var errs []error
	first := mods[0].file.Go
	if first == nil {
		return []error{errors.New("go.mod: no go line")}
	}
	for _, m := range mods[1:] {
		if m.file.Go == nil || m.file.Go.Version != first.Version {
			got := "none"
			if m.file.Go != nil {
				got = m.file.Go.Version
			}
			errs = append(errs, fmt.Errorf("%s: go %s, want go %s as in the root go.mod", path.Join(m.dir, "go.mod"), got, first.Version))
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return append(errs, err)
	}
	parts := strings.SplitN(first.Version, ".", 3)
	if len(parts) < 2 {
		return append(errs, fmt.Errorf("go.mod: go %s has no minor version", first.Version))
	}
	stated := "Go " + parts[0] + "." + parts[1] + " or later"
	if !bytes.Contains(readme, []byte(stated)) {
		errs = append(errs, fmt.Errorf("README.md: does not say %q, the minimum of the go.mod files", stated))
	}
	return errs
}

func commitTime(root string) (time.Time, error) {
	outb, err := exec.Command("git", "-C", root, "log", "-1", "--format=%cI").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("git log: %v", err)
	}
	return time.Parse(time.RFC3339, strings.TrimSpace(string(outb)))
}

func writeModule(root, out string, m *repoModule, version string, stamp time.Time) error {
	escaped, err := module.EscapePath(m.path())
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, stamp.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), m.gomod, 0o644); err != nil {
		return err
	}
	var files []modzip.File
	for _, name := range m.files {
		rel := name
		if m.dir != "." {
			rel = strings.TrimPrefix(name, m.dir+"/")
		}
		f := zipFile{rel: rel, abs: filepath.Join(root, filepath.FromSlash(name))}
		if rel == "go.mod" {
			f.abs = filepath.Join(dir, version+".mod") // m.gomod, edited or not
		}
		files = append(files, f)
	}
	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	if err := modzip.Create(zf, module.Version{Path: m.path(), Version: version}, files); err != nil {
		zf.Close()
		return err
	}
	return zf.Close()
}

// zipFile is a file of the working tree as golang.org/x/mod/zip reads it.
type zipFile struct {
	rel string // path in the module, with slashes
	abs string
}

func (f zipFile) Path() string                 { return f.rel }
func (f zipFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f zipFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
