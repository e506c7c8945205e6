-- fence: phase 2 of a fenced lock. Record the chosen token in every
-- counter, if the owner still holds every lock key.
--
-- KEYS[1..n]: the lock keys; KEYS[n+1..2n]: their fencing counters.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the token, a decimal integer.
--
-- Returns 1 when the owner holds every lock key and each counter is now at
-- least the token, 0 when a lock key no longer holds ARGV[1]; on 0 nothing
-- was written. A counter never decreases and never expires.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local token = tonumber(ARGV[2])
for i = 1, n do
  local counter = tonumber(redis.call('GET', KEYS[n + i]) or '0')
  if counter < token then
    redis.call('SET', KEYS[n + i], ARGV[2])
  end
end
return 1
