-- fence: phase 2 of a fenced lock. Record the chosen token in every
-- counter, if the owner still holds every lock key. counter() is in
-- counter.lua.
--
-- KEYS[1..n]: the lock keys; KEYS[n+1..2n]: their fencing counters.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the token, a decimal integer.
--
-- Returns 1 when the owner holds every lock key and each counter is now at
-- least the token, 0 when a lock key no longer holds ARGV[1], an error
-- reply when a counter holds something else than a token; on 0 or an error
-- nothing was written. A counter never decreases and never expires. Run
-- again with the same token, it changes nothing and returns 1 again.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local token = tonumber(ARGV[2])
local counters = {}
for i = 1, n do
  local c, err = counter(KEYS[n + i])
  if not c then
    return err
  end
  counters[i] = c
end
for i = 1, n do
  if counters[i] < token then
    redis.call('SET', KEYS[n + i], ARGV[2])
  end
end
return 1
