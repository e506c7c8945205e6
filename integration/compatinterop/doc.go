// Package compatinterop checks that locksmith's drop-in packages and the
// libraries they replace are wire-compatible on real Redis servers:
// compat/redsync beside go-redsync/redsync v4, on the same names, in both
// directions. Each excludes the other, and each can extend or release the
// other's lock given its value, so a fleet can migrate one service at a
// time. It holds tests only.
package compatinterop
