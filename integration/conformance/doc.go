// Package conformance runs the driver/drivertest conformance suite against
// real Redis servers for each of locksmith's adapters. It holds tests only.
package conformance
