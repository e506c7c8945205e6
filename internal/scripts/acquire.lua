-- acquire: take every lock key for one owner, or none of them.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the time to live in milliseconds.
--
-- Returns 1 when every key was set to ARGV[1] with the TTL, or already held
-- ARGV[1]; 0 when any key exists otherwise. On 0 no key was touched, and a
-- key that already held ARGV[1] keeps its TTL.
--
-- Finding the owner's own value is a grant so that the script is
-- idempotent: a Redis client that re-sends the command after a broken
-- connection must get the answer the first run gave. GET goes through
-- pcall: a key of another type is someone else's, a refusal, not an error.
if #KEYS == 1 then
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 1
  end
  if redis.pcall('GET', KEYS[1]) == ARGV[1] then
    return 1
  end
  return 0
end
local own = 0
for i = 1, #KEYS do
  local v = redis.pcall('GET', KEYS[i])
  if v == ARGV[1] then
    own = own + 1
  elseif v then
    return 0
  end
end
if own == #KEYS then
  return 1
elseif own > 0 then
  return 0
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
