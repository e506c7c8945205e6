-- acquire: take every lock key for one owner, or none of them.
--
-- KEYS: the lock keys, one or more.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the time to live in milliseconds.
--
-- Returns 1 when every key was set to ARGV[1] with the TTL, 0 when any key
-- already existed; on 0 no key was touched.
if #KEYS == 1 then
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 1
  end
  return 0
end
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
