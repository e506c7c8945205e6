-- election_proclaim: publish a new identity for the leader, if it still
-- holds the lock key.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: the election's record, a hash of owner, identity, term, seq.
-- ARGV[1]: the leader's random value.
-- ARGV[2]: the identity.
-- ARGV[3]: the leader's term, a decimal integer.
-- ARGV[4]: the proclamation's number, a decimal integer above 0, greater
-- for each later proclamation of the same leader.
-- ARGV[5]: the channel on which changes of the leader are announced.
--
-- Returns 1 when the lock key holds ARGV[1]: the record then holds this
-- proclamation or a later one, with the lock key's TTL; 0 when it does not,
-- and nothing was written. A proclamation applied again, or after a later
-- one, changes nothing and returns 1.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.pcall('HGET', KEYS[2], 'owner') == ARGV[1] then
  local seq = tonumber(redis.call('HGET', KEYS[2], 'seq'))
  if seq and seq >= tonumber(ARGV[4]) then
    return 1
  end
else
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'identity', ARGV[2], 'term', ARGV[3], 'seq', ARGV[4])
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
redis.pcall('PUBLISH', ARGV[5], ARGV[3])
return 1
