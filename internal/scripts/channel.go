package scripts

import "strings"

// releaseSuffix ends the name of every release channel.
const releaseSuffix = ":released"

// ReleaseChannel returns the pub/sub channel on which the Release script
// announces that key was released: [SameSlot] of key and ":released", the
// name release.lua builds too.
func ReleaseChannel(key string) string {
	return SameSlot(key, releaseSuffix)
}

// HasHashTag reports whether key has a Redis Cluster hash tag: a '{'
// followed later by a '}' with something in between. Only the tag is
// hashed to find the key's slot.
func HasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	return open >= 0 && strings.IndexByte(key[open+1:], '}') > 0
}

// SameSlot returns a name made of key and suffix that lies in key's Redis
// Cluster hash slot: key followed by suffix when key has a hash tag,
// otherwise the whole key wrapped in one. This is the one rule by which
// locksmith names what goes with a key (its fencing counter, its release
// channel); release.lua follows it for the channel, and a test checks that
// both agree. A key without a hash tag that contains '}' ends the tag it is
// wrapped in early: its callers that need the exact slot refuse such keys.
func SameSlot(key, suffix string) string {
	if HasHashTag(key) {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}
