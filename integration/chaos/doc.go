// Package chaos runs locksmith against five redis-server processes, each
// behind an in-process toxiproxy proxy, while faults are injected on a
// schedule drawn from a seed, and checks what the lock holders observed.
// The faults are those of the servers (kill -9, SIGSTOP, SCRIPT FLUSH), of
// the network (latency, blackhole, reset) and of a client whose requests
// are applied twice or lose their replies. The holders take plain and
// fenced locks, use Client.Do and Lock.KeepAlive, and share one Lock
// between goroutines that extend it with varying TTLs beside its KeepAlive
// and unlock it while the others still extend. Other workers, on the
// same Clients, hold permits of two semaphores with limits 1 and 3,
// renewed by Lock.KeepAlive or held through Semaphore.Do; a permit's
// resource is its slot. Election workers campaign on one election
// through Election.Do, write with their term as a fencing token while
// they lead, and resign or let Do resign; a leadership's resource is the
// election. Each adapter's Client follows the election with
// Election.Observe. The checkers:
//
//   - no two validity windows of one resource overlap (two leaderships
//     of the election included);
//   - no more permits of a semaphore are valid at any instant than its
//     limit;
//   - a fenced store never accepts a write of an older holder after one of
//     a newer holder, and fencing tokens are increasing and unique;
//   - a counter updated read-modify-write under the lock loses no update
//     that a late update (a holder descheduled past its validity between
//     checking it and writing, which fencing is for) does not explain;
//   - every Observe stream ends on "no leader" once every leadership
//     ended;
//   - no lock key, semaphore key (slot, or record of the limit) or
//     election record outlives its TTL and no fencing counter can expire.
//
// Two negative controls (a majority restarted without persistence, and
// eviction under memory pressure) break the operational requirements on
// purpose and must show violations, or the run fails; each runs until its
// history holds an overlap, for at most four times its planned duration.
// A third checks the semaphore checker: told a limit one lower than the real one, it must
// find over-limit windows in the safe phase's permits.
//
// It holds tests only. The run is selected with -chaos=short or
// -chaos=long (see the Makefile targets chaos and chaos-long); without the
// flag only the checkers' own tests run. The report is printed and written
// as JSON under results/.
package chaos
