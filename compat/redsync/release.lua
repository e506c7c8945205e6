-- release: delete the mutex key if it still holds the owner's value.
--
-- KEYS[1]: the mutex name.
-- ARGV[1]: the owner's value.
--
-- Returns 1 when the key held ARGV[1] and was deleted, 0 when it holds
-- another owner's value (left alone), -1 when it does not exist: the
-- lock expired or was never taken.
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if current == false then
  return -1
end
return 0
