-- extend_setnx: refresh the mutex key's TTL if it holds the owner's value,
-- or take the key again if it no longer exists.
--
-- KEYS[1]: the mutex name.
-- ARGV[1]: the owner's value.
-- ARGV[2]: the new time to live in milliseconds.
--
-- Returns 1 when the key now holds ARGV[1] with the new TTL (refreshed or
-- set anew), 0 when it holds another owner's value; on 0 nothing changed.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
