-- holds: tell whether the mutex key holds the owner's value.
--
-- KEYS[1]: the mutex name.
-- ARGV[1]: the owner's value.
--
-- Returns 1 when the key exists and holds ARGV[1], 0 otherwise. It never
-- writes.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
