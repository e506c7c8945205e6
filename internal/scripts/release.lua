-- release: delete the lock keys that still hold the owner's value, and tell
-- the processes waiting for them.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
--
-- Returns how many keys hold no one's value after it ran: those it deleted
-- and those already gone. A key that now belongs to another owner is left
-- alone and not counted. Counting the keys already gone makes the script
-- idempotent: a Redis client that re-sends it after a broken connection
-- gets the answer the first run gave. Whether a key was gone because the
-- release already ran or because the lock expired is for the caller to
-- tell, from the lock's validity.
--
-- For each key it deleted (and only those) a message is published on the
-- key's release channel (see ReleaseChannel in scripts.go, which must build
-- the same name): the key with ':released' appended when it has a hash
-- tag, otherwise '{' .. key .. '}:released', so that the channel lies in
-- the key's cluster hash slot. The payload, the release's tag, is the first
-- 16 hex digits of the SHA-1 of the released value: derived from the whole
-- value, so that any two owners' releases, announced by several nodes, are
-- told apart even when their values share a prefix or suffix, and useless
-- for acting as the owner. Plain PUBLISH reaches subscribers on every node
-- of a Redis Cluster as well as on a single server.
local function channel(key)
  local open = string.find(key, '{', 1, true)
  if open then
    local close = string.find(key, '}', open + 1, true)
    if close and close > open + 1 then
      return key .. ':released'
    end
  end
  return '{' .. key .. '}:released'
end

local tag = string.sub(redis.sha1hex(ARGV[1]), 1, 16)
local released = 0
for i = 1, #KEYS do
  local v = redis.pcall('GET', KEYS[i])
  if v == ARGV[1] then
    redis.call('DEL', KEYS[i])
    -- pcall: a user whose ACL denies PUBLISH on the channel still
    -- releases; waiters then poll.
    redis.pcall('PUBLISH', channel(KEYS[i]), tag)
    released = released + 1
  elseif not v then
    released = released + 1
  end
end
return released
