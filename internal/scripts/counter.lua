-- counter: read a fencing counter. scripts.go puts this function in front
-- of the fenced scripts, fenced_acquire.lua and fence.lua.
--
-- Returns the counter's value as a number, 0 for a key that does not exist,
-- or nil and an error reply when the key holds anything but a decimal
-- integer of at most 15 digits (written by hand, or by a client that
-- ignored the reserved ':fencing-token' suffix).
local function counter(key)
  local v = redis.pcall('GET', key)
  if not v then
    return 0
  end
  if type(v) ~= 'string' or not string.match(v, '^%d+$') or #v > 15 then
    return nil, redis.error_reply('locksmith: a fencing counter holds something other than a token; keys ending in :fencing-token are reserved for them')
  end
  return tonumber(v)
end

