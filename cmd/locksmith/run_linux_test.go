package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCommandDiesWithLocksmith kills locksmith with SIGKILL while its
// command runs: the command must not run on without the lock. The test
// process becomes a subreaper, so that the orphaned command becomes its
// child and its end can be waited for; how it ended is the verdict.
func TestCommandDiesWithLocksmith(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	_, flag := nodes(t, 3)
	dir := t.TempDir()
	// The command outlives a normal test by far when nothing stops it.
	const script = `echo $$ > "$DIR/pid.tmp" && mv "$DIR/pid.tmp" "$DIR/pid" && exec sleep 30`
	p := start(t, []string{"DIR=" + dir}, flag, "run", "orphan", "--", "sh", "-c", script)
	awaitFile(t, p, filepath.Join(dir, "pid"))
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Kill()
	p.wait(t)
	// locksmith has been reaped, so its orphan is this process's child.
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			t.Fatalf("waiting for the command (pid %d): %v", pid, err)
		}
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("after locksmith was killed the command ran on and ended with %s; want it killed by SIGKILL", waitText(ws))
	}
}

// waitText describes how a process ended.
func waitText(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return signalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}
