package scripts

import "strings"

// releaseSuffix ends the name of every release channel.
const releaseSuffix = ":released"

// ReleaseChannel returns the pub/sub channel on which the Release script
// announces that key was released. It builds the same name as release.lua:
// key followed by ":released" when key has a hash tag (a '{' followed later
// by a '}' with something in between), otherwise the whole key wrapped in a
// hash tag, so that the channel hashes to the key's cluster slot.
func ReleaseChannel(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + releaseSuffix
		}
	}
	return "{" + key + "}" + releaseSuffix
}
