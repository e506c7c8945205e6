-- obtain: take every lock key for one owner, or none of them. A key that
-- already holds a value starting with the owner's token counts as the
-- owner's own, so an owner who knows its token can take its lock again.
--
-- KEYS: the lock keys, one or more, distinct.
-- ARGV[1]: the value to store: the owner's token followed by its metadata.
-- ARGV[2]: the length of the token, in bytes, at the start of ARGV[1].
-- ARGV[3]: the time to live in milliseconds.
--
-- Returns 1 when every key was set to ARGV[1] with the TTL, 0 when some key
-- holds another owner's value; on 0 no key was touched.
local tokenLen = tonumber(ARGV[2])
local token = string.sub(ARGV[1], 1, tokenLen)
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current and string.sub(current, 1, tokenLen) ~= token then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[3])
end
return 1
