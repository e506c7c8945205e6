-- fenced_acquire: phase 1 of a fenced lock. Take every lock key for one
-- owner, or none of them, and report the highest fencing token the node
-- has recorded for these resources.
--
-- KEYS[1..n]: the lock keys; KEYS[n+1..2n]: their fencing counters, in the
-- same order (each in the same cluster hash slot as its lock key).
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the time to live in milliseconds.
--
-- Returns {1, highest} when every lock key was set, where highest is the
-- largest counter value (0 for a counter that does not exist yet), and 0
-- when any lock key already existed; on 0 no key was touched. Counters are
-- only read here.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
local highest = 0
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  local counter = tonumber(redis.call('GET', KEYS[n + i]) or '0')
  if counter > highest then
    highest = counter
  end
end
return {1, highest}
