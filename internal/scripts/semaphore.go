package scripts

import _ "embed"

var (
	//go:embed semaphore_acquire.lua
	semaphoreAcquireSource string
	//go:embed semaphore_extend.lua
	semaphoreExtendSource string
	//go:embed semaphore_inspect.lua
	semaphoreInspectSource string
)

// The scripts of a semaphore's permits; a permit's release is Release on
// its slot key, and the second phase of a fenced permit Fence on its slot
// key and counter. SemaphoreAcquire reads counters with the function in
// counter.lua. Their KEYS, ARGV and replies are described at the top of
// each .lua file.
var (
	SemaphoreAcquire = New("semaphore_acquire", counterSource+semaphoreAcquireSource)
	SemaphoreExtend  = New("semaphore_extend", semaphoreExtendSource)
	SemaphoreInspect = New("semaphore_inspect", semaphoreInspectSource)
)
