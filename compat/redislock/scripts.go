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
)
