// Package redlocktest runs in-process Redis nodes for tests of code that
// uses locksmith's redlock package, with the faults a test needs to reach
// its lock-loss paths.
//
// New starts the nodes and stops them when the test ends:
//
//	func TestInvoice(t *testing.T) {
//		nodes := redlocktest.New(t, 3)
//		client := nodes.Client(redlock.WithFencing())
//		...
//	}
//
// Each node is a miniredis server reached through a driver.Conn of this
// package ([Cluster.Conns]), which also implements driver.Notifier, so
// waiting Lock calls are woken by release notifications as on real Redis.
//
// # Time
//
// Keys expire in real time: each server's clock follows the wall clock, so a
// lock whose TTL runs out is gone from the nodes as it would be from real
// servers. [Cluster.Advance] and [Node.Advance] move a server's clock
// forward by hand, to test long TTLs without waiting; WithManualClock stops
// the clocks, so that keys expire only when a test advances them.
//
// The servers' clocks are not the client's: a lock's Lock.ValidUntil and its
// renewal timers run on the test process's monotonic clock. Advancing a node
// past a lock's TTL therefore makes the lock vanish from that node while its
// holder still thinks it valid, the situation a holder meets when a node
// expires keys early or is restarted.
//
// # Faults
//
// Every [Node] can be stopped and started ([Node.Stop], [Node.Start]),
// restarted without its data ([Node.Forget]), made to hold every request
// until resumed ([Node.Hang], [Node.Resume]) or to answer late
// ([Node.Slow]). [Cluster.LoseLock] removes a held lock from a majority of
// the nodes in one call, so that the context of Client.Do or Lock.KeepAlive
// is cancelled with redlock.ErrLockLost at the next renewal.
//
// Outside a test (a runnable example, a TestMain sharing nodes among tests),
// [Start] makes a Cluster and [Cluster.Close] shuts it down.
//
// # Errors
//
// A method given a bad argument (a negative duration, a nil lock) does
// nothing and reports it: a Cluster made by New marks its test failed, as
// t.Error does; one made by Start returns it from Close. New and
// [Cluster.Client] stop the test, as t.Fatal does, when they cannot go on.
//
// # Concurrency
//
// The methods of Cluster and Node may be called from any goroutine, also
// while locks are taken on the nodes, except New and Cluster.Client, which
// may stop the test and so must run on the test's goroutine.
package redlocktest
