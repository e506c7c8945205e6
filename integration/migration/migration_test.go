package migration

import (
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/integration/internal/redisnode"
)

// importMoves is the whole migration: each original import path, and every
// path under it, moves to the compat path.
var importMoves = []struct{ from, to string }{
	{"github.com/go-redsync/redsync/v4", "github.com/locksmith-go/locksmith/compat/redsync"},
	{"github.com/bsm/redislock", "github.com/locksmith-go/locksmith/compat/redislock"},
}

// programs are the directories under testdata, each a main package written
// against the original libraries, with the output each must print.
var programs = []struct {
	dir  string
	want string
}{
	{"redsync_readme", "locked my-global-mutex\nunlocked\n"},
	{"redsync_redigo", "locked, value length 24\n" +
		"rival: taken on 3 nodes\n" +
		"rival: gave up with ErrFailed\n" +
		"extended\n" +
		"unlocked\n" +
		"second unlock: lock already expired\n"},
	{"redsync_rueidis", "locked, valid for now: true\nunlocked\n"},
	{"redislock_readme", "I have a lock!\nYay, I still have my lock!\nNow, my lock has expired!\n"},
	{"redislock_typical", "obtained jobs:import by worker-1 token length 22\n" +
		"second worker: not obtained\n" +
		"third worker: deadline exceeded\n" +
		"refreshed\n" +
		"released\n" +
		"released again: not held\n" +
		"refresh after release: not obtained\n"},
}

// TestProgramsMigrateByImportPath builds each program as written and with
// its import paths moved, runs both builds against the same three servers,
// and requires the same output, a clean exit and no key left behind.
func TestProgramsMigrateByImportPath(t *testing.T) {
	mod := fixtureModule(t)
	for _, p := range programs {
		src, err := os.ReadFile(filepath.Join("testdata", p.dir, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		moved := moveImports(t, p.dir, src)
		writeFile(t, filepath.Join(mod, "original_"+p.dir, "main.go"), src)
		writeFile(t, filepath.Join(mod, "compat_"+p.dir, "main.go"), moved)
	}
	bin := filepath.Join(mod, "bin")
	// No symbol tables: linking ten programs is most of the build.
	goCmd(t, mod, "build", "-ldflags=-s -w", "-o", bin+string(filepath.Separator), "./...")

	nodes := redisnode.Start(t, 3, redisnode.Config{})
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	for _, p := range programs {
		for _, variant := range []string{"original", "compat"} {
			t.Run(p.dir+"/"+variant, func(t *testing.T) {
				for _, n := range nodes {
					n.Do(t, "FLUSHALL")
				}
				got := runProgram(t, filepath.Join(bin, variant+"_"+p.dir), strings.Join(addrs, ","))
				if got != p.want {
					t.Errorf("output:\n%s\nwant:\n%s", got, p.want)
				}
				for i, n := range nodes {
					if keys := n.Do(t, "DBSIZE"); keys != int64(0) {
						t.Errorf("node %d: %v keys left after the program, want 0", i, keys)
					}
				}
			})
		}
	}
}

// moveImports returns src with the import paths of importMoves replaced,
// byte for byte where the path literals stand, and checks that src imports
// nothing of locksmith and that nothing else changed: every line that
// differs is an import of a moved path, and at least one import moved.
func moveImports(t *testing.T, name string, src []byte) []byte {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	last, moves := 0, 0
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(path, "github.com/locksmith-go/") {
			t.Fatalf("%s imports %s: the program must be written against the original libraries", name, path)
		}
		to, ok := movedPath(path)
		if !ok {
			continue
		}
		start, end := fset.Position(spec.Path.Pos()).Offset, fset.Position(spec.Path.End()).Offset
		out.Write(src[last:start])
		out.WriteString(strconv.Quote(to))
		last = end
		moves++
	}
	out.Write(src[last:])
	if moves == 0 {
		t.Fatalf("%s: no import to move", name)
	}

	before, after := strings.Split(string(src), "\n"), strings.Split(out.String(), "\n")
	if len(before) != len(after) {
		t.Fatalf("%s: %d lines became %d", name, len(before), len(after))
	}
	changed := 0
	for i := range before {
		if before[i] == after[i] {
			continue
		}
		changed++
		if !importLine.MatchString(before[i]) || !importLine.MatchString(after[i]) {
			t.Fatalf("%s:%d: a line other than an import changed: %q became %q", name, i+1, before[i], after[i])
		}
	}
	if changed != moves {
		t.Fatalf("%s: %d lines changed for %d moved imports", name, changed, moves)
	}
	return out.Bytes()
}

// importLine is a line of an import block: an optional name and a path.
var importLine = regexp.MustCompile(`^\s*(import\s+)?([A-Za-z_][A-Za-z0-9_]*\s+)?"[^"]+"\s*$`)

func movedPath(path string) (string, bool) {
	for _, m := range importMoves {
		if path == m.from || strings.HasPrefix(path, m.from+"/") {
			return m.to + strings.TrimPrefix(path, m.from), true
		}
	}
	return "", false
}

// fixtureModule makes a module in a temporary directory that requires what
// the integration module requires, with its replace directives made
// absolute and its go.sum, so that the programs build against the same,
// checksummed versions of the original libraries and the same locksmith
// sources as the integration module.
func fixtureModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	text := moduleLine.ReplaceAllString(string(gomod), "module migrationcheck")
	text = relativeReplace.ReplaceAllStringFunc(text, func(m string) string {
		return "=> " + filepath.Join(root, strings.TrimSpace(strings.TrimPrefix(m, "=>")))
	})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(text))
	writeFile(t, filepath.Join(dir, "go.sum"), gosum)
	return dir
}

var (
	moduleLine      = regexp.MustCompile(`(?m)^module .*$`)
	relativeReplace = regexp.MustCompile(`=>\s*\.\.?/\S*`)
)

// goCmd runs the go command in dir, outside any workspace; it may complete
// the temporary go.mod, never the repository's.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // only ends a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// runProgram runs a built program with REDIS_ADDRS set and returns what it
// printed on stdout; a failed run fails the test with its stderr.
func runProgram(t *testing.T, path, addrs string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only ends a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(os.Environ(), "REDIS_ADDRS="+addrs)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", filepath.Base(path), err))
	}
}
