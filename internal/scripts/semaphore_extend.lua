-- semaphore_extend: give a permit's slot key a new TTL if the owner still
-- holds it, and keep the semaphore's limit record at least as long.
--
-- KEYS[1]: the slot key.
-- KEYS[2]: the semaphore's limit record.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the new time to live in milliseconds.
-- ARGV[3]: the limit, a decimal integer.
--
-- Returns 1 when the slot held ARGV[1] and got the new TTL, 0 otherwise;
-- on 0 nothing was touched, and an expired slot is never created again.
-- The record keeps the value it holds and gets the new TTL when it had
-- less; a record that is gone (deleted by hand) is set again to ARGV[3],
-- the limit under which this slot's permit was admitted. Run again, it
-- sets the same TTLs and still returns 1.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local ttl = tonumber(ARGV[2])
local left = redis.call('PTTL', KEYS[2])
if left == -2 then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
elseif left ~= -1 and left < ttl then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
