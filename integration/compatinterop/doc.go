// Package compatinterop checks that locksmith's drop-in packages and the
// libraries they replace are wire-compatible on real Redis servers:
// compat/redsync beside go-redsync/redsync v4 and compat/redislock beside
// bsm/redislock, on the same keys, in both directions. Each pair excludes
// the other, and each can extend or release the other's lock given its
// value or token, so a fleet can migrate one service at a time. It holds
// tests only.
package compatinterop
