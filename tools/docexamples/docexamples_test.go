package docexamples

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// exampleFile matches the files the documents may quote: example tests,
// which go test compiles (and runs, when they have an Output).
var exampleFile = regexp.MustCompile(`^example(_[a-z0-9_]+)?_test\.go$`)

// documents returns the Markdown files whose Go code must compile: the
// README and the notes in docs/.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// Every ```go block of the documents must appear in an example test file
// (example_test.go or example_*_test.go) of some package of the
// repository: each of its paragraphs (runs of lines between blank lines)
// as consecutive lines of the file, in the block's order, leading and
// trailing white space aside. A block may thus leave out lines between
// paragraphs, such as an Example function's own line.
func TestDocumentsQuoteExamples(t *testing.T) {
	examples := exampleFiles(t)
	if len(examples) == 0 {
		t.Fatal("no example test file found")
	}
	total := 0
	for _, doc := range documents(t) {
		blocks := goBlocks(t, doc)
		total += len(blocks)
		for _, b := range blocks {
			if !quotedByAny(examples, b.lines) {
				t.Errorf("%s:%d: the go block starting %q is in no example test file; put it in an example_test.go of the right package",
					filepath.ToSlash(mustRel(t, doc)), b.line, b.lines[0])
			}
		}
	}
	if total == 0 {
		t.Fatal("the documents have no go block")
	}
}

func mustRel(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// exampleFiles returns the lines of every example test file, trimmed.
func exampleFiles(t *testing.T) [][]string {
	t.Helper()
	var files [][]string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !exampleFile.MatchString(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimSpace(l)
		}
		files = append(files, lines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type codeBlock struct {
	line  int // of the opening fence, from 1
	lines []string
}

// goBlocks returns the ```go blocks of the Markdown file at path.
func goBlocks(t *testing.T, path string) []codeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []codeBlock
	var cur *codeBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &codeBlock{line: n}
		case cur != nil && strings.TrimSpace(line) == "```":
			if len(cur.lines) == 0 {
				t.Errorf("%s:%d: empty go block", path, cur.line)
			} else {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: go block never closed", path, cur.line)
	}
	return blocks
}

func quotedByAny(files [][]string, block []string) bool {
	for _, f := range files {
		if quotes(f, block) {
			return true
		}
	}
	return false
}

// quotes reports whether the paragraphs of block appear in file (whose
// lines are trimmed), each as consecutive lines and in order, ignoring
// leading and trailing white space.
func quotes(file, block []string) bool {
	var paragraphs [][]string
	var p []string
	for _, l := range block {
		if l = strings.TrimSpace(l); l == "" {
			if p != nil {
				paragraphs = append(paragraphs, p)
			}
			p = nil
			continue
		}
		p = append(p, l)
	}
	if p != nil {
		paragraphs = append(paragraphs, p)
	}
	if len(paragraphs) == 0 {
		return false
	}
	pos := 0
	for _, p := range paragraphs {
		at := indexRun(file[pos:], p)
		if at < 0 {
			return false
		}
		pos += at + len(p)
	}
	return true
}

// indexRun returns the index of the first run of lines in s equal to run,
// or -1.
func indexRun(s, run []string) int {
	for i := 0; i+len(run) <= len(s); i++ {
		match := true
		for j, l := range run {
			if s[i+j] != l {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

func TestQuotes(t *testing.T) {
	file := strings.Split("func ExampleX() {\na := 1\nb := 2\n\nc := 3\nfmt.Println(a, b, c)\n}", "\n")
	for _, tc := range []struct {
		block string
		want  bool
	}{
		{"a := 1\nb := 2", true},
		{"a := 1\n\nfmt.Println(a, b, c)", true},     // lines left out between paragraphs
		{"  a := 1\n  b := 2  ", true},               // indentation aside
		{"b := 2\n\na := 1", false},                  // out of order
		{"a := 1\nc := 3", false},                    // a paragraph must be consecutive lines
		{"a := 1\nb := 3", false},                    // a changed line
		{"a := 1\n\nd := 4", false},                  // a paragraph that is not there
		{"\n\n", false},                              // nothing to quote
		{"fmt.Println(a, b, c)\n}\n\nx := 0", false}, // past the end
	} {
		if got := quotes(file, strings.Split(tc.block, "\n")); got != tc.want {
			t.Errorf("quotes(%q) = %v, want %v", tc.block, got, tc.want)
		}
	}
}

func TestExampleFileNames(t *testing.T) {
	for name, want := range map[string]bool{
		"example_test.go":           true,
		"example_renewal_test.go":   true,
		"lostlock_test.go":          false,
		"example.go":                false,
		"myexample_test.go":         false,
		"example_test.go.orig":      false,
		"example_fencing_x_test.go": true,
	} {
		if got := exampleFile.MatchString(name); got != want {
			t.Errorf("exampleFile.MatchString(%q) = %v, want %v", name, got, want)
		}
	}
}
