//go:build unix

package redisserver

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"
)

// FreePorts asks the kernel for n distinct free loopback ports and reserves
// them in this process until ReleasePorts, so that servers started in
// parallel never get the same port. The kernel's listeners are closed
// before the ports are used, so a caller must still cope with losing one
// to another program.
func FreePorts(n int) ([]int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("redisserver: finding a free port: %w", err)
		}
		defer l.Close() // held until all n are picked, so they differ
		if port := l.Addr().(*net.TCPAddr).Port; !reserved.m[port] {
			ports = append(ports, port)
		}
	}
	for _, port := range ports {
		reserved.m[port] = true
	}
	return ports, nil
}

// ReleasePorts ends the reservation of ports made by FreePorts.
func ReleasePorts(ports ...int) {
	reserved.Lock()
	defer reserved.Unlock()
	for _, port := range ports {
		delete(reserved.m, port)
	}
}

// reserved holds the ports handed out by FreePorts and not yet released.
var reserved = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// pids holds the processes started by this package and not yet reaped.
var pids = struct {
	sync.Mutex
	m map[int]string
}{m: map[int]string{}}

func track(pid int, addr string) {
	pids.Lock()
	defer pids.Unlock()
	pids.m[pid] = addr
}

func untrack(pid int) {
	pids.Lock()
	defer pids.Unlock()
	delete(pids.m, pid)
}

// Leaked describes every process this package started that has not exited
// and been reaped, for a test binary's leak check once its tests are done.
// It waits up to two seconds for the reaping of processes killed last.
func Leaked() []string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids.Lock()
		var out []string
		for pid, addr := range pids.m {
			out = append(out, fmt.Sprintf("redis-server process pid %d on %s", pid, addr))
		}
		pids.Unlock()
		if len(out) == 0 || time.Now().After(deadline) {
			sort.Strings(out)
			return out
		}
		time.Sleep(pollInterval)
	}
}

// KillLeaked kills every process Leaked would describe.
func KillLeaked() {
	pids.Lock()
	defer pids.Unlock()
	for pid := range pids.m {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
