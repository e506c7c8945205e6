// Package drivertest checks that a [driver.Conn] keeps the contract that
// package driver describes.
//
// An adapter for a Redis client calls [Run] from one of its tests, against a
// real Redis server (or, for quick runs, an in-process stand-in):
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) driver.Conn {
//			client := myclient.Dial(addr)
//			t.Cleanup(client.Close)
//			return myadapter.New(client)
//		})
//	}
//
// Run checks each rule of the contract in a subtest named after the rule, so
// a failure names the rule it broke and `go test -run` can select one:
//
//   - ReplyTypes: replies are normalized to int64, string, []any and nil,
//     recursively, including nil inside arrays and empty arrays.
//   - ErrorReplies: error replies and Lua errors come back as errors, and
//     never as errors matching [driver.ErrNoScript].
//   - UnknownDigest: EvalSha of a digest the server does not know returns an
//     error matching [driver.ErrNoScript].
//   - ScriptLoad: ScriptLoad returns the script's SHA-1 digest as the server
//     reports it, and EvalSha runs the script by that digest for keys in
//     several hash slots, so on a Redis Cluster the script must have been
//     loaded on every node.
//   - KeysAndArgs: keys arrive as KEYS and args as ARGV, in order; nil and
//     empty slices are both fine.
//   - BinaryValues: values with every byte 0..255, NUL bytes and invalid
//     UTF-8 cross the Conn unchanged, in ARGV, in a stored key and in a reply.
//   - LargeValue: a 1 MiB value crosses the Conn unchanged.
//   - ContextDoneBeforeCall: a ctx that is already cancelled or past its
//     deadline makes every method return an error matching ctx.Err().
//   - ContextDoneDuringCall: after a call whose ctx ended while the server
//     was still running the script, the Conn's next call gets its own
//     reply; the call itself may return an error or, from a client that
//     waits for it, the reply (an error, for a deadline, from a Conn that
//     honours deadlines).
//   - Concurrency: one Conn used from 16 goroutines gives every caller its
//     own correct reply. Run the suite with -race to check for data races.
//
// The rules of the optional [driver.Notifier] run only when the Conn
// implements it, and are skipped otherwise:
//
//   - Notify: a message published by a script after Subscribe returned
//     reaches the subscriber with its payload unchanged, in the order
//     published from one node.
//   - NotifyShared: three subscribers on each of two channels of one
//     Notifier each get every message of their channel and nothing else.
//   - NotifyCancel: a cancelled subscription gets nothing more while the
//     others go on; cancel may be called twice; after every subscription
//     ended, a new one works.
//   - NotifyContextDone: Subscribe with a cancelled ctx returns an error
//     matching ctx.Err() and delivers nothing.
//   - NotifyQuiet: a subscription whose channel stays quiet for longer than
//     the client's read timeout keeps its connection (no new connection is
//     opened) and hears a message published after that.
//
// The rules about stalled nodes need hooks that produce the stall, given
// with [WithFaults] (see [Faults]), and are skipped without them:
//
//   - StalledDial: a call to a node the client cannot finish connecting to
//     (a full listen backlog, or a listener that never answers) returns
//     an error within 20s, with a deadline that expires and with a
//     cancel: not forever, though the stall goes on.
//   - StalledServer: with the server stopped (SIGSTOP) after the Conn
//     connected to it, a call returns an error within 20s, with a
//     deadline that expires and with a cancel; once the server goes on,
//     the Conn works.
//   - StalledHealthCheck: StalledServer for a Conn whose client checks a
//     pooled connection before using it (redigo's TestOnBorrow).
//   - HonorsDeadline: for a Conn whose [driver.DeadlineHonorer] reports
//     true, with the server stopped, Eval, EvalSha and ScriptLoad return
//     an error within a second of their ctx's deadline. In the three rules
//     above too, such a Conn's calls with a deadline return within a
//     second of it.
//   - NotifyQuiet (above) needs the QuietNotifier hook.
//
// The rules of the optional [driver.Identifier] run only when the Conn
// implements it; the last two need hooks given with [WithIdentity] (see
// [Identity]):
//
//   - NodeID: NodeID is non-empty and the same on every call; an ID in the
//     address form of the format that [driver.Identifier] describes is the
//     one [driver.AddrNodeID] makes; two Conns of newConn, which reach one
//     server, share an address ID.
//   - NodeIDAlias: a Conn to the same server under another of its names
//     (localhost for 127.0.0.1) has the same NodeID.
//   - NodeIDOther: a Conn to another server has another NodeID.
//
// The rules of the optional [driver.ServerIdentifier] run only when the Conn
// implements it; the second needs the Other hook of [Identity]:
//
//   - ServerID: after a Conn's first call, its ServerID is known and is the
//     run_id that a script reads from INFO server ("" when the server
//     reports none); before that call it was unknown (and "") or the same
//     ID, and it stays the same; two Conns of newConn, which reach one
//     server, report one ID.
//   - ServerIDOther: a Conn to another server has another ServerID.
//
// [RunUnmade], apart from Run, checks the Conns that an adapter's
// constructor did not make (the zero value and a nil pointer of its Conn
// type): they return errors and panic on no method.
//
// These rules cannot see goroutines: an adapter should also check, for
// example with go.uber.org/goleak, that ending every subscription ends the
// goroutines its Notifier started.
//
// # Server use
//
// The rules use only EVAL, EVALSHA and SCRIPT LOAD through the Conn under
// test, and SUBSCRIBE through a Notifier; messages are published with
// PUBLISH from a script, and the ServerID rules read INFO server from a
// script. Every key they touch starts with a random prefix in a hash tag, so
// several suites can share one server or cluster, and each test deletes its
// keys when it ends. Keys that one script uses together share their hash tag,
// so they are in one Redis Cluster slot. Scripts loaded with ScriptLoad stay
// in the server's script cache.
//
// ContextDoneDuringCall runs a script that keeps the server busy for about
// 50ms, bounded by the server's clock and by an iteration count; other
// clients of the same server wait that long.
//
// Beyond the bounds of the rules about stalled nodes, the suite asserts no
// durations: a check either gets the reply or error the contract requires,
// or fails.
package drivertest

import (
	"slices"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

// A rule is one property of the driver contract, checked by one subtest.
type rule struct {
	name  string
	check func(t *testing.T, newConn func(t *testing.T) driver.Conn, cfg config)
}

// rules lists what Run checks, in the order it checks it. The names are part
// of the package's API: they are the subtest names and the names Skip takes.
var rules = []rule{
	{"ReplyTypes", testReplyTypes},
	{"ErrorReplies", testErrorReplies},
	{"UnknownDigest", testUnknownDigest},
	{"ScriptLoad", testScriptLoad},
	{"KeysAndArgs", testKeysAndArgs},
	{"BinaryValues", testBinaryValues},
	{"LargeValue", testLargeValue},
	{"ContextDoneBeforeCall", testContextDoneBeforeCall},
	{"ContextDoneDuringCall", testContextDoneDuringCall},
	{"Concurrency", testConcurrency},
	{"Notify", testNotify},
	{"NotifyShared", testNotifyShared},
	{"NotifyCancel", testNotifyCancel},
	{"NotifyContextDone", testNotifyContextDone},
	{"NotifyQuiet", testNotifyQuiet},
	{"StalledDial", testStalledDial},
	{"StalledServer", testStalledServer},
	{"StalledHealthCheck", testStalledHealthCheck},
	{"HonorsDeadline", testHonorsDeadline},
	{"NodeID", testNodeID},
	{"NodeIDAlias", testNodeIDAlias},
	{"NodeIDOther", testNodeIDOther},
	{"ServerID", testServerID},
	{"ServerIDOther", testServerIDOther},
}

// An Option changes how [Run] checks a Conn.
type Option interface {
	apply(*config)
}

type config struct {
	skipped  map[string]string // rule name -> reason
	faults   Faults
	identity Identity
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Skip makes [Run] skip the rule called name (one of the names in the package
// documentation), reporting reason in the test log.
//
// Skip exists for in-process stand-ins for Redis that lack a feature a rule
// needs. A Conn talking to a real Redis server must pass every rule; never
// skip one there. Run fails the test if name is not a rule, so a misspelt
// name cannot hide a rule silently.
func Skip(name, reason string) Option {
	return optionFunc(func(c *config) {
		c.skipped[name] = reason
	})
}

// Run checks the Conns that newConn returns against the driver contract, one
// subtest per rule (see the package documentation for the list).
//
// Run calls newConn once in each subtest, with that subtest's t, so newConn
// can register the cleanup of the client it creates with t.Cleanup. Every
// Conn must talk to the same server, or to the same Redis Cluster.
//
// Run does not call t.Parallel.
func Run(t *testing.T, newConn func(t *testing.T) driver.Conn, opts ...Option) {
	t.Helper()
	cfg := config{skipped: make(map[string]string)}
	for _, opt := range opts {
		opt.apply(&cfg)
	}
	for name := range cfg.skipped {
		known := slices.ContainsFunc(rules, func(r rule) bool { return r.name == name })
		if !known {
			t.Fatalf("drivertest.Skip(%q): no rule has that name", name)
		}
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			if reason, ok := cfg.skipped[r.name]; ok {
				t.Skipf("skipped by drivertest.Skip: %s", reason)
			}
			r.check(t, newConn, cfg)
		})
	}
}
