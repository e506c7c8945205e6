package redsync

import (
	_ "embed"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// The scripts redsync needs beyond locksmith's own acquire and extend. Their
// KEYS, ARGV and replies are described at the top of each .lua file.
var (
	//go:embed release.lua
	releaseSource string
	//go:embed extend_setnx.lua
	extendSetNXSource string
	//go:embed holds.lua
	holdsSource string

	releaseScript     = scripts.New("redsync-release", releaseSource)
	extendSetNXScript = scripts.New("redsync-extend-setnx", extendSetNXSource)
	holdsScript       = scripts.New("redsync-holds", holdsSource)
)
