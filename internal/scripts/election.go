package scripts

import _ "embed"

var (
	//go:embed election_fence.lua
	electionFenceSource string
	//go:embed election_proclaim.lua
	electionProclaimSource string
	//go:embed election_extend.lua
	electionExtendSource string
	//go:embed election_release.lua
	electionReleaseSource string
	//go:embed election_leader.lua
	electionLeaderSource string
)

// The scripts of an election's leadership, a lock whose first phase is
// FencedAcquire on the lock key and its counter. ElectionFence reads the
// counter with the function in counter.lua. Their KEYS, ARGV and replies
// are described at the top of each .lua file.
var (
	ElectionFence    = New("election_fence", counterSource+electionFenceSource)
	ElectionProclaim = New("election_proclaim", electionProclaimSource)
	ElectionExtend   = New("election_extend", electionExtendSource)
	ElectionRelease  = New("election_release", electionReleaseSource)
	ElectionLeader   = New("election_leader", electionLeaderSource)
)
