//go:build !linux

package main

import "syscall"

// setParentDeathSignal does nothing: only Linux has the parent-death
// signal locksmith relies on.
func setParentDeathSignal(*syscall.SysProcAttr) {}

const parentDeathHelp = `If locksmith itself dies (SIGKILL, the OOM killer), the command runs on
without the lock, which expires within --ttl: only on Linux does the kernel
then kill the command. Stop the command's process group yourself (-v shows
its number).

`
