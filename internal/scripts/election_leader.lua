-- election_leader: read who holds an election's lock key and what its
-- record says, without changing anything.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: the election's record.
-- ARGV: none.
--
-- Returns 0 when the lock key does not exist. Otherwise {holder, pttl,
-- identity, term, seq}: holder tells holders apart without giving their
-- value away (the first 16 hex digits of the SHA-1 of a string value, or
-- 'type:' and the key's type for any other); pttl is PTTL KEYS[1] (-1 for
-- no expiry); identity, term and seq are the record's when its owner is
-- the lock key's value, and false otherwise.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  return 0
end
local pttl = redis.call('PTTL', KEYS[1])
if kind ~= 'string' then
  return {'type:' .. kind, pttl, false, false, false}
end
local v = redis.call('GET', KEYS[1])
local holder = string.sub(redis.sha1hex(v), 1, 16)
if redis.call('TYPE', KEYS[2])['ok'] ~= 'hash' or redis.call('HGET', KEYS[2], 'owner') ~= v then
  return {holder, pttl, false, false, false}
end
local r = redis.call('HMGET', KEYS[2], 'identity', 'term', 'seq')
return {holder, pttl, r[1], r[2], r[3]}
