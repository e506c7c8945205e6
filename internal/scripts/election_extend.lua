-- election_extend: give a leadership's lock key and record a new TTL, if
-- the leader still holds the lock key.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: the election's record.
-- ARGV[1]: the leader's random value.
-- ARGV[2]: the new time to live in milliseconds.
--
-- Returns 1 when the lock key held ARGV[1] and got the new TTL, 0
-- otherwise; on 0 nothing was touched, and an expired key is never
-- created again. The record gets the same TTL when it is the leader's.
-- Run again, it sets the same TTLs and still returns 1.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.pcall('HGET', KEYS[2], 'owner') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
