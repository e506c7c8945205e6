// Package scripts holds the Lua scripts that run on each node and sends them
// efficiently: SCRIPT LOAD once per node, EVALSHA afterwards, EVAL when the
// node has forgotten the script.
//
// The digest of a script always comes from the server's reply to SCRIPT
// LOAD; nothing here computes SHA-1. Scripts made with New at run time, such
// as the custom scripts of redlock.WithScripts, are loaded and cached
// per node like the built-in ones.
package scripts

import (
	"context"
	_ "embed"
	"errors"
	"sync"

	"github.com/locksmith-go/locksmith/driver"
)

var (
	//go:embed acquire.lua
	acquireSource string
	//go:embed release.lua
	releaseSource string
	//go:embed extend.lua
	extendSource string
	//go:embed fenced_acquire.lua
	fencedAcquireSource string
	//go:embed fence.lua
	fenceSource string
	//go:embed counter.lua
	counterSource string
)

// The scripts of a plain lock. Their KEYS, ARGV and replies are described at
// the top of each .lua file.
var (
	Acquire = New("acquire", acquireSource)
	Release = New("release", releaseSource)
	Extend  = New("extend", extendSource)

	// The two phases of a fenced lock's acquisition. Both read the
	// counters with the function in counter.lua.
	FencedAcquire = New("fenced_acquire", counterSource+fencedAcquireSource)
	Fence         = New("fence", counterSource+fenceSource)
)

// Script is a Lua script with a name for error messages.
type Script struct {
	name   string
	source string
}

// New returns a script with the given name and Lua source.
func New(name, source string) *Script {
	return &Script{name: name, source: source}
}

// Name returns the script's name.
func (s *Script) Name() string { return s.name }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.source }

// Node runs scripts on one node and remembers the digests that node
// reported. It is safe for concurrent use.
type Node struct {
	conn    driver.Conn
	digests sync.Map // *Script -> string
}

// NewNode returns a Node that sends scripts through conn.
func NewNode(conn driver.Conn) *Node {
	return &Node{conn: conn}
}

// Conn returns the connection the node sends scripts through.
func (n *Node) Conn() driver.Conn { return n.conn }

// Run runs s on the node with the given keys and args and returns its
// reply.
//
// The first run of a script on a node loads it with SCRIPT LOAD and keeps
// the digest the node returns; later runs send only the digest. When the
// node no longer has the script (it restarted, was flushed or failed over),
// the run is repeated with the full source, which caches it again.
func (n *Node) Run(ctx context.Context, s *Script, keys, args []string) (any, error) {
	digest, err := n.digest(ctx, s)
	if err != nil {
		// A node that cannot load scripts may still run them.
		return n.conn.Eval(ctx, s.source, keys, args)
	}
	reply, err := n.conn.EvalSha(ctx, digest, keys, args)
	if errors.Is(err, driver.ErrNoScript) {
		return n.conn.Eval(ctx, s.source, keys, args)
	}
	return reply, err
}

func (n *Node) digest(ctx context.Context, s *Script) (string, error) {
	if d, ok := n.digests.Load(s); ok {
		return d.(string), nil
	}
	d, err := n.conn.ScriptLoad(ctx, s.source)
	if err != nil {
		return "", err
	}
	n.digests.Store(s, d)
	return d, nil
}
