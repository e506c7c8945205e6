// Package interop checks that locksmith and other Redis lock libraries
// (go-redsync/redsync v4 and bsm/redislock) exclude each other on the same
// keys, and that locksmith can release their locks given their values. It
// holds tests only.
package interop
