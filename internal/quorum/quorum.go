// Package quorum holds the arithmetic of the Redlock algorithm and the
// fan-out that sends one request to every node at once.
//
// The arithmetic is pure: it takes durations and counts and returns
// durations and counts, so it is tested with tables and no servers.
package quorum

import "time"

// clockDriftFloor is added to the proportional drift allowance. It covers the
// granularity of the servers' expiry clocks, which matters most for short
// TTLs where the proportional part is tiny.
const clockDriftFloor = 2 * time.Millisecond

// Size returns how many of n nodes form a majority. It is fixed by the
// number of configured nodes, never by how many are reachable.
func Size(n int) int {
	return n/2 + 1
}

// Decided reports whether the answers of a round to n nodes, yes of them
// for its outcome and no against it, decide it: a quorum said yes, or so
// many did not that no quorum can be reached.
func Decided(n, yes, no int) bool {
	return yes >= Size(n) || Gone(no, n)
}

// Drift returns the clock-drift allowance for a lock of the given TTL:
// ttl*factor plus a 2 ms floor.
func Drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + clockDriftFloor
}

// Validity returns how long a lock stays safe to use after a round of
// requests that took elapsed: what is left of ttl once elapsed and the
// drift allowance are taken off. A result <= 0 means the round was too slow
// for the lock to be of any use, whatever the votes.
func Validity(ttl, elapsed, drift time.Duration) time.Duration {
	return ttl - elapsed - drift
}

// Gone reports whether refused nodes of n answering that they do not hold
// a lock leave too few for any quorum to hold it: another owner may take
// it, and no retry of the round can win it back.
func Gone(refused, n int) bool {
	return refused > n-Size(n)
}

// Granted reports whether a round with votes nodes in favour, out of n,
// and the given validity grants the lock.
func Granted(votes, n int, validity time.Duration) bool {
	return votes >= Size(n) && validity > 0
}
