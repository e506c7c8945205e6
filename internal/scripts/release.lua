-- release: delete the lock keys that still hold the owner's value.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
--
-- Returns how many keys were deleted. A key that expired or now belongs to
-- another owner is left alone and not counted.
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
