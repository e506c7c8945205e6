package scripts

import _ "embed"

//go:embed inspect.lua
var inspectSource string

// Inspect reads a lock key and its fencing counter and changes nothing. Its
// KEYS, ARGV and reply are described at the top of inspect.lua.
var Inspect = New("inspect", inspectSource)
