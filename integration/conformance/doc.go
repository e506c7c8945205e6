// Package conformance runs the driver/drivertest conformance suite against
// real Redis servers for each of locksmith's adapters, with the hooks of its
// rules about stalled nodes and node identity, and checks what the suite
// cannot: cancellation while a server is busy, one server reached through
// two adapters, and a locker built while a minority of its nodes is down.
// It holds tests only.
package conformance
