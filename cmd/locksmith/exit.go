package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes of locksmith itself. A command run by "locksmith run" passes
// its own code through instead.
const (
	exitOK       = 0
	exitUnsafe   = 1  // doctor found something unsafe; release released nothing
	exitUsage    = 64 // bad flags or arguments (sysexits EX_USAGE)
	exitError    = 69 // no quorum reachable, bad configuration, a semaphore's limit mismatch (EX_UNAVAILABLE); --error-exit-code
	exitConflict = 75 // run: the key is held elsewhere (EX_TEMPFAIL, as lockf); --conflict-exit-code
	exitLost     = 76 // run: the lock was lost, or --max-hold reached, while the command ran; --lost-exit-code
	exitNoExec   = 126
	exitNotFound = 127
)

const exitCodesHelp = `Exit codes:
  the command's     run: the command ran; its own exit code
  128+N             run: the command was killed by signal N, or locksmith got
                    signal N while it waited for the lock
  75                run: not acquired, the key (with --limit, every permit) is
                    held elsewhere (--wait ran out, or -n) (--conflict-exit-code)
  76                run: the lock was lost, or --max-hold was reached, while
                    the command ran (--lost-exit-code)
  69                no quorum of nodes could be reached, or the configuration
                    is wrong: URLs, TLS files, password file, or with run
                    --limit a limit other than the one KEY is in use with
                    (--error-exit-code)
  64                bad flags or arguments
  126, 127          run: the command could not be executed, or was not found
  1                 doctor: something unsafe was found; release: nothing was
                    released`

// exitErr is an error that ends locksmith with a given code. A nil err
// exits silently.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitErr) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitErr{code: code, err: err} }

func usagef(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

// codeOf returns the exit code for err, which execute got from a command.
func codeOf(err error, fallback int) int {
	if err == nil {
		return exitOK
	}
	var e *exitErr
	if errors.As(err, &e) {
		return e.code
	}
	return fallback
}

// scrub replaces every secret in msg, so that no password reaches the
// output whatever error carried it.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}
