package redlock

import (
	"context"
	"strings"

	"github.com/locksmith-go/locksmith/internal/quorum"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

// scriptUse is a script as a Client runs it.
type scriptUse struct {
	script *scripts.Script
	custom bool // not the default: it gets the extra keys and arguments
}

// scriptKind is one of the three scripts that can be customized.
type scriptKind int

const (
	acquireScript scriptKind = iota
	extendScript
	releaseScript
)

var scriptNames = [...]string{"acquire", "extend", "release"}

var defaultScripts = [...]*scripts.Script{scripts.Acquire, scripts.Extend, scripts.Release}

// scriptOption records the function that makes a custom script; newConfig
// calls it.
func scriptOption(kind scriptKind, f func(defaultSource string) string) Option {
	return optionFunc(func(c *config) {
		c.scriptFuncs[kind] = f
		c.scriptSet[kind] = true
	})
}

// WithAcquireScript sets the Lua script that takes a lock on each node.
// New calls f with the default script's source and runs what it returns,
// so f can return a replacement or the default with additions. Its contract
// (KEYS, ARGV, replies) is in the package documentation, "Custom scripts".
// It cannot be combined with WithFencing, whose acquisition runs scripts of
// its own. Default: the built-in script, SET NX PX on each key.
func WithAcquireScript(f func(defaultSource string) string) Option {
	return scriptOption(acquireScript, f)
}

// WithExtendScript sets the Lua script that extends a lock on each node, as
// WithAcquireScript does for acquisition. Default: the built-in script,
// PEXPIRE of each key that still holds the owner's value.
func WithExtendScript(f func(defaultSource string) string) Option {
	return scriptOption(extendScript, f)
}

// WithReleaseScript sets the Lua script that releases a lock on each node,
// as WithAcquireScript does for acquisition. Default: the built-in script,
// DEL of each key that still holds the owner's value.
func WithReleaseScript(f func(defaultSource string) string) Option {
	return scriptOption(releaseScript, f)
}

// WithExtraKeys sets a function that returns, for the keys of a lock (with
// the key prefix), extra Redis keys passed to the custom scripts after the
// lock keys. It is called once per Lock, Extend (each renewal included) or
// Resume call, must return the same keys for the same lock keys, and may
// return none; it gets a copy of the lock keys. On Redis Cluster the extra keys must hash to the lock keys' slot, for
// example "{invoice:42}:owner" beside the lock key "{invoice:42}". Default:
// no extra keys.
func WithExtraKeys(f func(lockKeys []string) []string) Option {
	return optionFunc(func(c *config) {
		c.extraKeys = f
		c.extraKeysSet = true
	})
}

// WithExtraArgs sets extra arguments passed to the custom scripts after
// their own ARGV. Default: none.
func WithExtraArgs(args ...string) Option {
	return optionFunc(func(c *config) {
		c.extraArgs = append([]string(nil), args...)
		c.extraArgsSet = true
	})
}

func (c *config) scriptUses() [3]*scriptUse {
	return [...]*scriptUse{&c.acquire, &c.extend, &c.release}
}

// buildScripts makes the scripts of the Client from the script options.
func (c *config) buildScripts() error {
	for kind, def := range defaultScripts {
		use := scriptUse{script: def}
		if c.scriptSet[kind] {
			name := scriptNames[kind]
			f := c.scriptFuncs[kind]
			if f == nil {
				return invalidf("nil %s script function", name)
			}
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
	case c.extraKeysSet && c.extraKeys == nil:
		return invalidf("nil extra keys function")
	case (c.extraKeysSet || c.extraArgsSet) && !c.anyCustomScript():
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
// without WithExtraKeys.
func (c *config) extraKeysOf(keys []string) (*[]string, error) {
	if c.extraKeys == nil {
		return nil, nil
	}
	extra := c.extraKeys(append([]string(nil), keys...))
	for _, k := range extra {
		if k == "" {
			return nil, invalidf("the extra keys function returned an empty key")
		}
	}
	return &extra, nil
}

// scriptInput returns the request and arguments script s gets: those of
// the default, followed by the extra keys and arguments when s is custom.
func (c *Client) scriptInput(s scriptUse, req request, args []string) (request, []string) {
	if !s.custom {
		return req, args
	}
	if req.extra != nil {
		req.keys = append(req.keys[:len(req.keys):len(req.keys)], *req.extra...)
	}
	return req, append(args[:len(args):len(args)], c.cfg.extraArgs...)
}

// runScript runs s on every node, as round does, with its input.
func (c *Client) runScript(ctx context.Context, s scriptUse, req request, args []string, lanes *quorum.Lanes, yes func(any) bool) []result {
	req, args = c.scriptInput(s, req, args)
	return c.round(ctx, s.script, req, args, lanes, yes)
}
