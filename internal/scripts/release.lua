-- release: delete the lock keys that still hold the owner's value, and tell
-- the processes waiting for them.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
--
-- Returns how many keys were deleted. A key that expired or now belongs to
-- another owner is left alone and not counted.
--
-- For each deleted key a message is published on the key's release
-- channel (see ReleaseChannel in scripts.go, which must build the same
-- name): the key with ':released' appended when it has a hash tag,
-- otherwise '{' .. key .. '}:released', so that the channel lies in the
-- key's cluster hash slot. The payload is the last 8 characters of the
-- released value: enough for a waiter to tell one release, announced by
-- several nodes, from another, and too little to act as the owner. Plain
-- PUBLISH reaches subscribers on every node of a Redis Cluster as well as
-- on a single server.
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

local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    -- pcall: a user whose ACL denies PUBLISH on the channel still
    -- releases; waiters then poll.
    redis.pcall('PUBLISH', channel(KEYS[i]), string.sub(ARGV[1], -8))
    deleted = deleted + 1
  end
end
return deleted
