-- pttl: how long the owner's lock keys have left to live.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's value (token and metadata).
--
-- Returns the smallest remaining time to live of the keys in milliseconds
-- when every key holds ARGV[1], or -3 when some key does not (it expired
-- or belongs to another owner). A key without a TTL gives -1. It never
-- writes.
local least = nil
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return -3
  end
  local left = redis.call('PTTL', KEYS[i])
  if least == nil or left < least then
    least = left
  end
end
return least
