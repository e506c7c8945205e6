package main

import "syscall"

// setParentDeathSignal has the kernel send the command SIGKILL when
// locksmith dies without ending it (SIGKILL, the OOM killer): no one is
// left then to renew the lock or to follow a gentler signal with SIGKILL
// when it is ignored, and a command that ran on would outlive the lock.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

const parentDeathHelp = `If locksmith itself dies (SIGKILL, the OOM killer), the kernel sends SIGKILL
to the command, so that it does not run on without the lock: no one is left to
follow a gentler signal with SIGKILL. Processes the command started are not
signalled; a script should exec its last command. The lock is not released
then: it expires within --ttl.

`
