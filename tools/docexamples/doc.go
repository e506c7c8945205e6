// Package docexamples holds the test that keeps the Go code of the
// repository's Markdown documents compiling: every ```go block must be
// quoted from an example test file.
package docexamples
