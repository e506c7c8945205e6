package redisserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the process that
// started it dies without its cleanups. (The signal follows the forking OS
// thread; the Go runtime only retires a thread whose goroutine exits while
// locked to it, which nothing that starts servers does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
