package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/locksmith-go/locksmith/redlock"
	"github.com/locksmith-go/locksmith/redlock/observe"
)

const runHelp = `Acquire KEY on a quorum of the nodes, run COMMAND while the lock is renewed,
and release the lock however the command ends: what flock(1) does with a
file, over Redis.

Waiting: by default run waits for the lock as long as it takes; --wait D gives
up after D, and -n (or --wait 0) makes a single attempt. A wait also ends
(exit 69) when three attempts in a row could not reach a quorum of nodes: it
is for a lock held elsewhere, not for nodes that are down or refuse the
credentials. While waiting on a terminal, run says so on stderr every
--progress-every (key, time waited, attempts); when stderr is not a terminal,
only with -v. SIGINT, SIGTERM, SIGHUP or SIGQUIT end the wait (exit 128+N).

The command runs directly, without a shell unless --shell is given (then the
words after KEY are joined with spaces and run by /bin/sh -c), in a process
group of its own, with stdin, stdout and stderr inherited and in its
environment:

  LOCKSMITH_KEY        KEY
  LOCKSMITH_DEADLINE   the lock's validity when the command started (RFC 3339);
                       renewal moves the real deadline later
  LOCKSMITH_TOKEN      the fencing token, with --fencing: pass it with every
                       write to a resource that rejects tokens lower than the
                       highest it has seen
  LOCKSMITH_VALUE      the lock's value, only with --export-value: whoever knows
                       it can extend or release the lock

SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to locksmith are forwarded to the
command's process group. Being in a group of its own, the command is stopped
(SIGTTIN) if it reads from the terminal.

The lock's TTL is --ttl; it is extended when half of it is left. When the lock
can no longer be guaranteed (too many nodes stopped answering or lost the key)
or --max-hold has passed, locksmith sends --signal to the process group, and
SIGKILL --kill-after later, or sooner: when the validity ends earlier, SIGKILL
goes out halfway between the signal and the end of the validity.

What can be guaranteed: when nodes stop answering (crash, pause, partition)
the loss is noticed at the latest when 10% of the TTL is left, so the signal
and then SIGKILL are sent before the lock's validity ends, as long as
locksmith itself gets the CPU. What cannot: a lock whose keys a node lost
early (eviction, a restart without persistence, a failover, release --force)
may already belong to another process when the signal goes out; a paused or
starved locksmith signals late; no signal stops writes already on their way.
Use --fencing, and a resource that checks the token, where that matters.

On exit the lock is released on every node, with a context of its own that no
signal cancels. With --min-hold D it is instead left to expire D after it was
acquired, when D has not passed yet, so that jobs started by clocks that
disagree run at most once per period (within 10ms).

Permits: with --limit N, KEY names a semaphore of N permits and the command
runs holding one of them, so that at most N commands run at once on KEY over
every machine that uses the nodes (what sem -j N of GNU parallel does on one
machine). A permit is a lock on one of N slot keys, and all of the above holds
for it: the waiting and exit 75 when all N are taken, --ttl and renewal, the
signals when it is lost, --max-hold, --min-hold and the release. The command
also gets in its environment:

  LOCKSMITH_PERMIT     the key of the permit's slot, KEY:permit:I in KEY's
                       hash tag ({KEY}:permit:I when KEY has none)
  LOCKSMITH_SLOT       I, the slot's number from 0 to N-1, which no other
                       running command holds: to pick one of N resources

With --fencing the token counts per slot: a resource checks it against the
highest token it has seen for that LOCKSMITH_PERMIT, not for KEY. Every run on
KEY must give the same --limit, which the nodes record: a run with another
fails (exit 69) until every holder of the recorded limit has ended and its TTL
has passed. --limit 1 is a lock on the semaphore's keys, not on KEY: it does
not exclude a run on KEY without --limit.

Leading: with --elect IDENTITY, KEY names an election and the command runs
while this run leads it: run campaigns as IDENTITY (what locksmith status
--election KEY shows), waiting as for a lock, and starts the command once it
leads. The leadership is renewed and, when it is lost, the command is
signalled as for a lost lock; on exit run resigns, which wakes a waiting
candidate at once. The command also gets in its environment:

  LOCKSMITH_TERM       the leadership's term, greater for every new leader:
                       pass it with every write, as a fencing token, to a
                       resource that rejects terms lower than the highest it
                       has seen

--elect waits for leadership: it takes neither -n, --wait 0, --limit nor
--min-hold.

`

type runOptions struct {
	wait          time.Duration
	nonblock      bool
	ttl           time.Duration
	maxHold       time.Duration
	minHold       time.Duration
	fencing       bool
	shell         bool
	exportValue   bool
	signal        syscall.Signal
	killAfter     time.Duration
	progressEvery time.Duration
	conflictCode  int
	lostCode      int
	limit         int    // permits of the semaphore KEY; 0 for the lock KEY
	elect         string // the identity of a candidate in the election KEY; "" for the lock KEY
	electSet      bool   // --elect was given
}

// forwarded are the signals that end a wait and are passed on to the
// command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// Polling between attempts while waiting; a release wakes the waiter
// sooner through the library's release notifications.
const (
	retryDelay  = 200 * time.Millisecond
	retryJitter = 300 * time.Millisecond
)

func (a *app) runCommand() *cobra.Command {
	o := runOptions{signal: syscall.SIGTERM}
	cmd := &cobra.Command{
		Use:   "run [flags] KEY [--] COMMAND [ARGS...]",
		Short: "Run a command while holding a lock",
		Long:  runHelp + parentDeathHelp + exitCodesHelp,
		Example: `  # A nightly job that must not run twice at once, waiting at most 10 minutes:
  locksmith run --wait 10m --nodes redis://r1:6379,redis://r2:6379,redis://r3:6379 \
      nightly-report -- /usr/local/bin/report --since yesterday

  # At most 4 exports at once over every machine, each on a part of its own:
  locksmith run --limit 4 --shell exports -- '/usr/local/bin/export --part $LOCKSMITH_SLOT'

  # A scheduler that runs on one machine at a time, the others standing by:
  locksmith run --elect "$(hostname)" --shell scheduler -- '/usr/local/bin/scheduler --term $LOCKSMITH_TERM'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 1 && args[1] == "--":
				args = append(args[:1:1], args[2:]...)
			case len(args) > 1 && strings.HasPrefix(args[1], "-"):
				// Flags stop at KEY; a flag after it would be run as the
				// command.
				return usagef("flags go before KEY: %q follows KEY %q; write locksmith run [flags] KEY -- COMMAND (a command starting with \"-\" goes after --)", args[1], args[0])
			}
			if len(args) < 2 {
				return usagef("run needs KEY and a COMMAND; see locksmith run --help")
			}
			if err := o.check(cmd); err != nil {
				return err
			}
			return a.run(args[0], args[1:], o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything after KEY belongs to the command
	f.DurationVar(&o.wait, "wait", 0, "how long to wait for the lock; 0 makes a single attempt")
	f.Lookup("wait").DefValue = "forever"
	f.BoolVarP(&o.nonblock, "nonblock", "n", false, "do not wait: fail at once when the lock is held (same as --wait 0)")
	f.DurationVar(&o.ttl, "ttl", 30*time.Second, "the lock's time to live; renewed while the command runs")
	f.DurationVar(&o.maxHold, "max-hold", 0, "stop renewing after this long and signal the command (0: no bound)")
	f.DurationVar(&o.minHold, "min-hold", 0, "on exit leave the lock to expire this long after it was acquired, instead of releasing it")
	f.BoolVar(&o.fencing, "fencing", false, "acquire a fencing token and pass it in LOCKSMITH_TOKEN")
	f.BoolVar(&o.shell, "shell", false, "run the command with /bin/sh -c")
	f.BoolVar(&o.exportValue, "export-value", false, "pass the lock's value, a bearer secret, in LOCKSMITH_VALUE")
	f.Var(signalValue{&o.signal}, "signal", "signal sent to the command's process group when the lock is lost")
	f.DurationVar(&o.killAfter, "kill-after", 10*time.Second, "send SIGKILL this long after --signal, or sooner so that it lands before the validity ends")
	f.DurationVar(&o.progressEvery, "progress-every", 5*time.Second, "how often to report a wait on stderr")
	f.IntVar(&o.conflictCode, "conflict-exit-code", exitConflict, "exit code when the lock is held elsewhere")
	f.IntVar(&o.lostCode, "lost-exit-code", exitLost, "exit code when the lock is lost or --max-hold reached while the command runs")
	f.IntVar(&o.limit, "limit", 0, "hold one of this many permits of the semaphore KEY instead of the lock KEY")
	f.StringVar(&o.elect, "elect", "", "lead the election KEY as this identity instead of holding the lock KEY")
	return cmd
}

func (o *runOptions) check(cmd *cobra.Command) error {
	switch {
	case o.ttl <= 0:
		return usagef("--ttl %v: want a positive duration", o.ttl)
	case o.wait < 0:
		return usagef("--wait %v: want a duration >= 0", o.wait)
	case o.nonblock && flagChanged(cmd.Flags(), "wait") && o.wait != 0:
		return usagef("-n and --wait %v contradict each other", o.wait)
	case o.maxHold < 0 || o.minHold < 0 || o.killAfter < 0:
		return usagef("--max-hold, --min-hold and --kill-after: want durations >= 0")
	case o.progressEvery <= 0:
		return usagef("--progress-every %v: want a positive duration", o.progressEvery)
	case flagChanged(cmd.Flags(), "limit") && (o.limit < 1 || o.limit > redlock.MaxSemaphoreLimit):
		return usagef("--limit %d: want 1 to %d permits", o.limit, redlock.MaxSemaphoreLimit)
	}
	if flagChanged(cmd.Flags(), "wait") && o.wait == 0 {
		o.nonblock = true
	}
	if o.electSet = flagChanged(cmd.Flags(), "elect"); o.electSet {
		switch {
		case o.nonblock:
			return usagef("--elect waits for leadership: give --wait D, not -n or --wait 0")
		case o.limit > 0 || o.minHold > 0:
			return usagef("--elect takes neither --limit nor --min-hold")
		}
	}
	if !flagChanged(cmd.Flags(), "wait") {
		o.wait = -1 // forever
	}
	return nil
}

// unreachableAttempts is how many attempts in a row may fail to reach a
// quorum of nodes before a wait gives up.
const unreachableAttempts = 3

// errUnreachable ends a wait after unreachableAttempts.
var errUnreachable = errors.New("no quorum of nodes answered")

// waitTracker follows the attempts of a wait, for the progress reports and
// to end a wait that cannot succeed.
type waitTracker struct {
	attempts    atomic.Int64            // attempts whose round has finished
	unreachable int                     // attempts in a row; only the Lock call's goroutine uses it
	cancel      context.CancelCauseFunc // ends the wait
}

func (w *waitTracker) observer() observe.Observer {
	return observe.Observer{
		AttemptDone: func(_ context.Context, info observe.RoundInfo) {
			w.attempts.Store(int64(info.Attempt))
			if len(info.Errors) <= info.Nodes-info.Quorum {
				w.unreachable = 0
				return
			}
			if w.unreachable++; w.unreachable >= unreachableAttempts && w.cancel != nil {
				w.cancel(errUnreachable)
			}
		},
	}
}

func (a *app) run(key string, argv []string, o runOptions) error {
	w := &waitTracker{}
	opts := []redlock.Option{
		redlock.WithRetryStrategy(redlock.ConstantBackoff(retryDelay, retryJitter, math.MaxInt)),
		redlock.WithObserver(w.observer()),
	}
	if o.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	if o.maxHold > 0 {
		opts = append(opts, redlock.WithMaxHold(o.maxHold))
	}
	if o.minHold > 0 {
		// The lock is left to expire: closing the Client must not
		// release it.
		opts = append(opts, redlock.WithReleaseOnClose(false))
	}
	client, nodes, err := a.client(opts...)
	if err != nil {
		return err
	}
	defer closeAfter(client, nodes)

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	lock, leader, err := a.acquire(client, key, o, sigs, w)
	if err != nil {
		return err
	}
	acquiredAt := time.Now()
	// The messages name what is held: KEY, or the key of a permit's slot.
	held := lock.Key()
	a.logf("acquired %q after %d attempt(s); valid until %s", held, w.attempts.Load(), formatTime(lock.ValidUntil()))

	var keepCtx context.Context
	stopKeep := func() {}
	if leader != nil {
		// Campaign renews the leadership; Unlock of its lock resigns.
		keepCtx = leader.Context()
		a.logf("leading %q as %q, term %d", key, leader.Identity(), leader.Term())
	} else {
		keepCtx, stopKeep = lock.KeepAlive(context.Background())
	}
	child := a.childCommand(key, argv, o, lock)
	exited := make(chan error, 1)
	if err := startChild(child, exited); err != nil {
		stopKeep()
		a.release(lock, held, o, acquiredAt, false)
		code := exitNoExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return withCode(code, err)
	}
	pgid := child.Process.Pid
	a.logf("running %s (process group %d)", argv[0], pgid)

	lost := a.supervise(lock, held, o, pgid, keepCtx, sigs, exited)
	stopKeep()
	a.release(lock, held, o, acquiredAt, lost != nil)

	if lost != nil {
		// supervise has reported the cause.
		return withCode(o.lostCode, fmt.Errorf("lock on %q not kept to the end of the command", held))
	}
	return childExit(child.ProcessState)
}

// acquire waits for the lock as o says, ending the wait on a signal. With
// --elect it returns the leadership and its lock.
func (a *app) acquire(client *redlock.Client, key string, o runOptions, sigs <-chan os.Signal, w *waitTracker) (*redlock.Lock, *redlock.Leadership, error) {
	ctx, cancelCause := context.WithCancelCause(context.Background())
	defer cancelCause(nil)
	w.cancel = cancelCause
	cancel := func() { cancelCause(context.Canceled) }
	if o.wait > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.wait)
		defer stop()
	}
	caught := make(chan os.Signal, 1)
	waiting := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case s := <-sigs:
			caught <- s
			cancel()
		case <-waiting:
		}
	})
	if !o.nonblock && (a.verbose || isTerminal(os.Stderr)) {
		wg.Go(func() { a.reportWait(key, o.progressEvery, &w.attempts, waiting) })
	}
	lock, leader, err := take(ctx, client, key, o)
	close(waiting)
	wg.Wait()
	select {
	case s := <-caught:
		if lock != nil {
			a.unlock(lock, key) // for a leadership, resigns
		}
		sig := s.(syscall.Signal)
		return nil, nil, withCode(128+int(sig), fmt.Errorf("%s while waiting for %q", signalName(sig), key))
	default:
	}
	if err == nil {
		return lock, leader, nil
	}
	if errors.Is(err, redlock.ErrLimitMismatch) {
		return nil, nil, a.fail(fmt.Errorf("%w; give every run on it the same --limit, or wait a --ttl after the last holder of the other has ended", err))
	}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) && qe.Refused > 0 {
		a.logf("%q is held elsewhere: %d of %d nodes refused, %d attempt(s)", key, qe.Refused, qe.Nodes, w.attempts.Load())
		return nil, nil, withCode(o.conflictCode, nil)
	}
	if errors.Is(err, redlock.ErrInvalidArgument) {
		return nil, nil, withCode(exitUsage, err)
	}
	if errors.Is(context.Cause(ctx), errUnreachable) && qe != nil {
		// The wait's own cancellation says nothing the last attempt
		// does not.
		err = qe
	}
	if errors.Is(err, redlock.ErrNotAcquired) {
		// It names the key and each node's cause already.
		return nil, nil, a.fail(err)
	}
	return nil, nil, a.fail(fmt.Errorf("could not acquire %q: %w", key, err))
}

// take acquires the lock KEY, or with --limit one of the permits of the
// semaphore KEY, with a single attempt under -n; or with --elect leads the
// election KEY, and returns the leadership's lock beside it.
func take(ctx context.Context, client *redlock.Client, key string, o runOptions) (*redlock.Lock, *redlock.Leadership, error) {
	switch {
	case o.electSet:
		e, err := client.Election(key, o.ttl)
		if err != nil {
			return nil, nil, err
		}
		l, err := e.Campaign(ctx, o.elect)
		if err != nil {
			return nil, nil, err
		}
		lock, _ := redlock.LockFromContext(l.Context())
		return lock, l, nil
	case o.limit > 0:
		sem, err := client.Semaphore(key, o.limit)
		if err != nil {
			return nil, nil, err
		}
		var lock *redlock.Lock
		if o.nonblock {
			lock, err = sem.TryAcquire(ctx, o.ttl)
		} else {
			lock, err = sem.Acquire(ctx, o.ttl)
		}
		return lock, nil, err
	}
	var lock *redlock.Lock
	var err error
	if o.nonblock {
		lock, err = client.TryLock(ctx, key, o.ttl)
	} else {
		lock, err = client.Lock(ctx, key, o.ttl)
	}
	return lock, nil, err
}

// reportWait says every interval how long the wait for key has lasted,
// until waiting is closed.
func (a *app) reportWait(key string, every time.Duration, attempts *atomic.Int64, waiting <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-waiting:
			return
		case <-t.C:
			a.warnf("waiting for %q: %s, %d attempt(s)", key, time.Since(start).Round(time.Second/10), attempts.Load())
		}
	}
}

// childCommand prepares the command, in a process group of its own, with
// the lock in its environment.
func (a *app) childCommand(key string, argv []string, o runOptions, lock *redlock.Lock) *exec.Cmd {
	var c *exec.Cmd
	if o.shell {
		c = exec.Command("/bin/sh", "-c", strings.Join(argv, " "))
	} else {
		c = exec.Command(argv[0], argv[1:]...)
	}
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(c.SysProcAttr)
	env := make([]string, 0, len(os.Environ())+6)
	for _, kv := range os.Environ() {
		// Variables of an enclosing locksmith run describe another lock.
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "LOCKSMITH_KEY", "LOCKSMITH_TOKEN", "LOCKSMITH_DEADLINE", "LOCKSMITH_VALUE", "LOCKSMITH_PERMIT", "LOCKSMITH_SLOT", "LOCKSMITH_TERM":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LOCKSMITH_KEY="+key, "LOCKSMITH_DEADLINE="+formatTime(lock.ValidUntil()))
	if o.limit > 0 {
		env = append(env, "LOCKSMITH_PERMIT="+lock.Key(), "LOCKSMITH_SLOT="+permitSlot(lock.Key()))
	}
	if o.fencing {
		env = append(env, "LOCKSMITH_TOKEN="+strconv.FormatUint(lock.Token(), 10))
	}
	if o.electSet {
		env = append(env, "LOCKSMITH_TERM="+strconv.FormatUint(lock.Token(), 10))
	}
	if o.exportValue {
		env = append(env, "LOCKSMITH_VALUE="+lock.Value())
	}
	c.Env = env
	return c
}

// permitSlot returns the number of the slot whose key is key, which the
// doc of redlock.Semaphore gives as its name followed by ":permit:" and
// the number.
func permitSlot(key string) string {
	return key[strings.LastIndex(key, ":permit:")+len(":permit:"):]
}

// startChild starts c and returns Start's error; when c has started, a
// goroutine waits for it and sends Wait's error on exited.
//
// The goroutine that starts c stays locked to its OS thread until c has
// ended. A parent-death signal (setParentDeathSignal) fires when the thread
// that started the command exits, not when the process does
// (https://go.dev/issue/27505); the Go runtime ends a thread when a
// goroutine returns while locked to it, which any goroutine given that
// thread, here or in a library, may do. A locked thread runs no other
// goroutine.
func startChild(c *exec.Cmd, exited chan<- error) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := c.Start()
		started <- err
		if err == nil {
			exited <- c.Wait()
		}
	}()
	return <-started
}

// supervise forwards signals to the command's process group until the
// command exits, and signals it, then kills it, when the lock is lost. It
// returns why the lock was not kept, or nil.
func (a *app) supervise(lock *redlock.Lock, key string, o runOptions, pgid int, keepCtx context.Context, sigs <-chan os.Signal, exited <-chan error) error {
	var lost error
	var kill <-chan time.Time
	done := keepCtx.Done()
	for {
		select {
		case s := <-sigs:
			a.logf("forwarding %s to process group %d", signalName(s.(syscall.Signal)), pgid)
			syscall.Kill(-pgid, s.(syscall.Signal))
		case <-done:
			done = nil
			lost = context.Cause(keepCtx)
			validUntil := lock.ValidUntil()
			what := "lost"
			if errors.Is(lost, redlock.ErrHoldLimit) {
				what = "held for --max-hold"
			}
			a.warnf("lock on %q %s (%v); valid until %s; sending %s to process group %d", key, what, lost, formatTime(validUntil), signalName(o.signal), pgid)
			syscall.Kill(-pgid, o.signal)
			delay := min(o.killAfter, max(time.Until(validUntil)/2, 0))
			kill = time.After(delay)
		case <-kill:
			kill = nil
			a.warnf("sending SIGKILL to process group %d", pgid)
			syscall.Kill(-pgid, syscall.SIGKILL)
		case <-exited:
			if lost == nil && keepCtx.Err() != nil {
				lost = context.Cause(keepCtx)
				a.warnf("lock on %q lost (%v) as the command exited", key, lost)
			}
			return lost
		}
	}
}

// release releases the lock, or with --min-hold leaves it to expire
// min-hold after acquiredAt.
func (a *app) release(lock *redlock.Lock, key string, o runOptions, acquiredAt time.Time, lost bool) {
	if o.minHold > 0 && !lost {
		if rest := o.minHold - time.Since(acquiredAt); rest > minHoldSlack {
			if err := lock.Extend(context.Background(), rest); err != nil {
				a.warnf("leaving %q held for --min-hold: %v", key, err)
				return
			}
			a.logf("leaving %q to expire in %s (--min-hold)", key, rest.Round(time.Millisecond))
			return
		}
	}
	a.unlock(lock, key)
}

// minHoldSlack is the rest of --min-hold below which the lock is released
// rather than left to expire: too short for a TTL beyond the drift
// allowance.
const minHoldSlack = 10 * time.Millisecond

func (a *app) unlock(lock *redlock.Lock, key string) {
	if err := lock.Unlock(context.Background()); err != nil {
		a.warnf("releasing %q: %v; the keys left expire within --ttl", key, err)
		return
	}
	a.logf("released %q", key)
}

// childExit returns the command's exit status as locksmith's: its code, or
// 128+N when signal N killed it.
func childExit(ps *os.ProcessState) error {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return withCode(128+int(ws.Signal()), nil)
	}
	if code := ps.ExitCode(); code != 0 {
		return withCode(code, nil)
	}
	return nil
}

// formatTime formats a time for output and the environment: RFC 3339 in
// UTC, to the millisecond.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
