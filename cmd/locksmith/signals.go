package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// signalNames are the signals --signal accepts by name.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"TERM": syscall.SIGTERM, "ALRM": syscall.SIGALRM,
}

// signalValue is a pflag.Value for a signal given by name (TERM, SIGTERM)
// or number.
type signalValue struct{ sig *syscall.Signal }

func (v signalValue) String() string { return signalName(*v.sig) }

func (v signalValue) Type() string { return "signal" }

func (v signalValue) Set(s string) error {
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if sig, ok := signalNames[name]; ok {
		*v.sig = sig
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n >= 65 {
		return fmt.Errorf("unknown signal %q: want a name such as TERM or a number", s)
	}
	*v.sig = syscall.Signal(n)
	return nil
}

// signalName returns "SIGTERM" for syscall.SIGTERM.
func signalName(sig syscall.Signal) string {
	for name, s := range signalNames {
		if s == sig {
			return "SIG" + name
		}
	}
	return "signal " + strconv.Itoa(int(sig))
}
