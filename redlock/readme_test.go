package redlock_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Go code is quoted from the runnable examples and tests of the
// repository's modules, so that their compilation (and, for examples with an
// Output and for tests, their run) keeps it in step with the API. Each ```go
// block of README.md must appear in one *_test.go file: each of its
// paragraphs (runs of lines between blank lines) as consecutive lines of the
// file, in the block's order, indentation aside. A quote may thus leave out
// lines between paragraphs, such as an Example function's own line.
func TestREADMEQuotesExamples(t *testing.T) {
	const root = ".."
	blocks := readmeGoBlocks(t, filepath.Join(root, "README.md"))
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	quotable := make(map[string][]string)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			quotable[path] = strings.Split(string(data), "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		found := false
		for _, lines := range quotable {
			if quotes(lines, b.lines) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README.md:%d: the go block starting %q is in no *_test.go file; quote a runnable example or a test verbatim", b.line, b.lines[0])
		}
	}
}

type codeBlock struct {
	line  int // of the opening fence, from 1
	lines []string
}

func readmeGoBlocks(t *testing.T, path string) []codeBlock {
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

// quotes reports whether the paragraphs of block appear in file, each as
// consecutive lines and in order, ignoring leading and trailing white space.
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
	trimmed := make([]string, len(file))
	for i, l := range file {
		trimmed[i] = strings.TrimSpace(l)
	}
	pos := 0
	for _, p := range paragraphs {
		at := indexRun(trimmed[pos:], p)
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
	file := strings.Split("func ExampleX() {\n\ta := 1\n\tb := 2\n\n\tc := 3\n\tfmt.Println(a, b, c)\n}", "\n")
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
