-- inspect: read a lock key and its fencing counter without changing
-- anything.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: its fencing counter; absent when the key cannot have one.
-- ARGV: none.
--
-- Returns {type, value, pttl, counter}: type is the Redis type of KEYS[1]
-- ('none' when it does not exist); value is its value when it is a string
-- and false otherwise; pttl is PTTL KEYS[1] (-2 absent, -1 no expiry);
-- counter is the value of KEYS[2] when it is a string and false otherwise.
-- The script only reads, so it writes nothing to the AOF or to replicas.
local kind = redis.call('TYPE', KEYS[1])['ok']
local value = false
if kind == 'string' then
  value = redis.call('GET', KEYS[1])
end
local pttl = redis.call('PTTL', KEYS[1])
local counter = false
if #KEYS > 1 and redis.call('TYPE', KEYS[2])['ok'] == 'string' then
  counter = redis.call('GET', KEYS[2])
end
return {kind, value, pttl, counter}
