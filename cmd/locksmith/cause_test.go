package main

import (
	"strings"
	"testing"
)

// When no quorum can be reached, run names each node's cause once, as the
// library's error does: a connection refused, a password the node wants.
func TestRunNamesTheCause(t *testing.T) {
	locked := startServer(t, "requirepass sekret")
	for _, tc := range []struct {
		name, nodes, want string
	}{
		{"refused", "--nodes=redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3", "connection refused"},
		{"NOAUTH", "--nodes=" + locked.URL(), "NOAUTH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := locksmith(t, []string{"LOCKSMITH_NODES="}, tc.nodes, "run", "orders:42", "--", "true")
			if r.code != exitError {
				t.Errorf("exit code %d; want %d; stderr: %s", r.code, exitError, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q; want it naming %q", r.stderr, tc.want)
			}
			if n := strings.Count(r.stderr, `"orders:42"`); n != 1 {
				t.Errorf("stderr %q names the key %d times; want once", r.stderr, n)
			}
			if strings.Contains(r.stderr, "not sent") {
				t.Errorf("stderr %q reports a request not sent; want the node's cause", r.stderr)
			}
		})
	}
}

// run works on the deployment its programs use, an even number of nodes
// included (a program opts in with redlock.WithEvenNodes; doctor warns).
func TestRunOnAnEvenNumberOfNodes(t *testing.T) {
	a, b := startServer(t), startServer(t)
	r := locksmith(t, []string{"LOCKSMITH_NODES="}, "--nodes="+a.URL()+","+b.URL(), "run", "even", "--", "true")
	if r.code != exitOK {
		t.Errorf("exit code %d; want %d; stderr: %s", r.code, exitOK, r.stderr)
	}
}
