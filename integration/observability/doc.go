// Package observability checks, against real Redis servers and through
// each of locksmith's adapters, what the otel module records (metric names
// and counts, spans) and that custom Lua scripts with extra keys and
// arguments run as documented. It holds tests only.
package observability
