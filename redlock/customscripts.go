package redlock

import (
	"strings"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// scriptUse is a script as a Client runs it.
type scriptUse struct {
	script *scripts.Script
	custom bool // not the default: it gets the extra keys and arguments
}

// The three scripts that can be customized, in the order of Scripts'
// fields.
var scriptNames = [...]string{"acquire", "extend", "release"}

var defaultScripts = [...]*scripts.Script{scripts.Acquire, scripts.Extend, scripts.Release}

// Scripts are the Lua scripts a Client runs on each node, for [WithScripts]:
// each non-nil function makes one of them from the default script's source,
// and the extra keys and arguments are passed to those that differ from
// the default. A nil field leaves the default: the zero Scripts changes
// nothing.
//
// Every script must keep the contract below, on which the lock's safety
// rests. KEYS holds the n lock keys (with the key prefix, in the order
// given), then the extra keys. ARGV holds the arguments below, then the
// extra arguments. A default script gets neither extra keys nor
// arguments; a script that wraps a default and takes extra keys must stop
// the default's loops over #KEYS at n.
//
//   - acquire: ARGV[1] is the new owner's value, ARGV[2] the TTL in
//     milliseconds. It sets every lock key to ARGV[1] with that TTL and
//     returns 1; when any lock key exists, it touches none and returns 0.
//     When every lock key already holds ARGV[1] it returns 1 and leaves
//     their TTL alone: the request was sent twice.
//   - extend: ARGV[1] is the owner's value, ARGV[2] the new TTL in
//     milliseconds. Only when every lock key still holds ARGV[1] does it
//     set their TTL and return 1; otherwise it returns 0 and creates no key.
//   - release: ARGV[1] is the owner's value. It deletes each lock key that
//     still holds ARGV[1], and only those, and returns how many lock keys
//     are released: deleted or already gone. It may publish a release
//     notification. It also runs after every failed attempt, on every
//     node, possibly several times.
//
// Any other reply counts as a node error. Every script compares the stored
// value with ARGV[1] before touching a lock key, names every key it
// touches in KEYS (the extra keys in the lock keys' hash slot), and never
// builds a key or a command from ARGV.
type Scripts struct {
	// Acquire returns the script that takes a lock on each node, given
	// the default's source: a replacement, or the default with additions.
	// It cannot be combined with WithFencing, whose acquisition runs
	// scripts of its own. Default: the built-in script, SET NX PX on each
	// key.
	Acquire func(defaultSource string) string

	// Extend returns the script that extends a lock on each node, as
	// Acquire does for acquisition. Default: the built-in script, PEXPIRE
	// of each key that still holds the owner's value.
	Extend func(defaultSource string) string

	// Release returns the script that releases a lock on each node, as
	// Acquire does for acquisition. Default: the built-in script, DEL of
	// each key that still holds the owner's value.
	Release func(defaultSource string) string

	// ExtraKeys returns, for the keys of a lock (with the key prefix),
	// extra Redis keys passed to the custom scripts after the lock keys.
	// It is called once per Lock, Extend (each renewal included) or Resume
	// call, must return the same keys for the same lock keys, and may
	// return none, but no empty key; it gets a copy of the lock keys. On
	// Redis Cluster the extra keys must hash to the lock keys' slot, for
	// example "{invoice:42}:owner" beside the lock key "{invoice:42}".
	// Default: no extra keys.
	ExtraKeys func(lockKeys []string) []string

	// ExtraArgs are passed to the custom scripts after their own ARGV.
	// Default: none.
	ExtraArgs []string
}

// WithScripts replaces the Lua scripts a Client runs on each node, or
// wraps the defaults, and gives the custom scripts extra KEYS and ARGV;
// see [Scripts]. New calls each function of s once, with the default
// script's source, and runs what it returns: with SCRIPT LOAD and EVALSHA,
// falling back to EVAL when a node has forgotten it, like the defaults.
// Given more than once, the last one counts. Default: the built-in
// scripts, with no extra keys or arguments.
//
// New returns an error matching [ErrInvalidArgument] when a function
// returns an empty script, when extra keys or arguments are given but
// every script is the default (the defaults take neither), and for a
// custom Acquire with WithFencing.
func WithScripts(s Scripts) Option {
	s.ExtraArgs = append([]string(nil), s.ExtraArgs...)
	return optionFunc(func(c *config) { c.scripts = s })
}

func (c *config) scriptUses() [3]*scriptUse {
	return [...]*scriptUse{&c.acquire, &c.extend, &c.release}
}

// buildScripts makes the scripts of the Client from the script options.
func (c *config) buildScripts() error {
	funcs := [...]func(string) string{c.scripts.Acquire, c.scripts.Extend, c.scripts.Release}
	for kind, def := range defaultScripts {
		use := scriptUse{script: def}
		if f := funcs[kind]; f != nil {
			name := scriptNames[kind]
			src := f(def.Source())
			if strings.TrimSpace(src) == "" {
				return invalidf("the %s script is empty", name)
			}
			if src != def.Source() {
				use = scriptUse{script: scripts.New("custom "+name, src), custom: true}
			}
		}
		*c.scriptUses()[kind] = use
	}
	switch {
	case (c.scripts.ExtraKeys != nil || len(c.scripts.ExtraArgs) > 0) && !c.anyCustomScript():
		return invalidf("extra keys or arguments are only passed to custom scripts, and every script is the default")
	case c.fencing && c.acquire.custom:
		return invalidf("a custom acquire script cannot be combined with WithFencing")
	}
	return nil
}

// anyCustomScript reports whether any script is custom, the only ones
// that get the extra keys.
func (c *config) anyCustomScript() bool {
	return c.acquire.custom || c.extend.custom || c.release.custom
}

// extraKeysOf returns the extra keys of a lock with the given keys, nil
// without Scripts.ExtraKeys.
func (c *config) extraKeysOf(keys []string) (*[]string, error) {
	if c.scripts.ExtraKeys == nil {
		return nil, nil
	}
	extra := c.scripts.ExtraKeys(append([]string(nil), keys...))
	for _, k := range extra {
		if k == "" {
			return nil, invalidf("the extra keys function returned an empty key")
		}
	}
	return &extra, nil
}
