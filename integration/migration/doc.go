// Package migration checks that moving a program from go-redsync/redsync v4
// or bsm/redislock to locksmith's compat packages is a change of import
// paths and nothing else: the programs under testdata, written against the
// original libraries, are built twice, as they are and with only their
// import paths rewritten, and both builds run against real Redis servers
// and must print the same output. It also runs the driver contract on the
// pools that compat/redsync/redis's sub-packages build. It holds tests
// only.
package migration
