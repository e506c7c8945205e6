//go:build unix && !linux

package redisserver

import "syscall"

// sysProcAttr: outside Linux a server outlives a process that dies without
// its cleanups.
func sysProcAttr() *syscall.SysProcAttr { return nil }
