-- fenced_acquire: phase 1 of a fenced lock. Take every lock key for one
-- owner, or none of them, and report the highest fencing token the node
-- has recorded for these resources. counter() is in counter.lua.
--
-- KEYS[1..n]: the lock keys; KEYS[n+1..2n]: their fencing counters, in the
-- same order (each in the same cluster hash slot as its lock key).
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the time to live in milliseconds.
--
-- Returns {1, highest} when every lock key was set, or already held ARGV[1]
-- (then it keeps its TTL), where highest is the largest counter value (0 for
-- a counter that does not exist yet); 0 when any lock key exists otherwise;
-- an error reply when a counter holds something else than a token. On 0 or
-- an error no key was touched. Counters are only read here. Finding the
-- owner's own value is a grant so that a re-sent command gets the answer
-- the first run gave.
local n = #KEYS / 2
local own = 0
for i = 1, n do
  local v = redis.pcall('GET', KEYS[i])
  if v == ARGV[1] then
    own = own + 1
  elseif v then
    return 0
  end
end
if own > 0 and own < n then
  return 0
end
local highest = 0
for i = 1, n do
  local c, err = counter(KEYS[n + i])
  if not c then
    return err
  end
  if c > highest then
    highest = c
  end
end
if own == 0 then
  for i = 1, n do
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  end
end
return {1, highest}
