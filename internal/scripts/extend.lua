-- extend: give the lock keys a new TTL if the owner still holds all of them.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the new time to live in milliseconds.
--
-- Returns 1 when every key held ARGV[1] and got the new TTL, 0 otherwise; on
-- 0 no key was touched. A key that has expired is never created again.
-- It is idempotent: run again, as by a Redis client that re-sends the
-- command, it sets the same TTL again and still returns 1.
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
