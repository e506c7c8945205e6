package redislock

import (
	_ "embed"

	"github.com/locksmith-go/locksmith/internal/scripts"
)

// The scripts redislock needs beyond locksmith's own extend and release.
// Their KEYS, ARGV and replies are described at the top of each .lua file.
var (
	//go:embed obtain.lua
	obtainSource string
	//go:embed pttl.lua
	pttlSource string

	obtainScript = scripts.New("redislock-obtain", obtainSource)
	pttlScript   = scripts.New("redislock-pttl", pttlSource)

	// releaseScript runs locksmith's release, notifications included, and
	// returns how many keys it deleted, as redislock's release does.
	// locksmith's own reply also counts keys already gone, which Release
	// must report as ErrLockNotHeld.
	releaseScript = scripts.New("redislock-release", releaseHeld+
		"local function release()\n"+scripts.Release.Source()+"\nend\nrelease()\nreturn held\n")
)

// releaseHeld counts the lock keys that hold the owner's value, ARGV[1],
// before locksmith's release deletes them.
const releaseHeld = `local held = 0
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    held = held + 1
  end
end
`
