-- election_fence: phase 2 of a campaign. Record the term in the fencing
-- counter and publish the leader's record, if the candidate still holds
-- the lock key. counter() is in counter.lua.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: its fencing counter.
-- KEYS[3]: the election's record, a hash of owner, identity, term, seq.
-- ARGV[1]: the candidate's random value.
-- ARGV[2]: the term, a decimal integer.
-- ARGV[3]: the candidate's identity.
-- ARGV[4]: the channel on which changes of the leader are announced.
--
-- Returns 1 when the lock key holds ARGV[1]: the counter is then at least
-- the term and the record is the candidate's, with the lock key's TTL; 0
-- when it does not, and nothing was written; an error reply when the
-- counter holds something else than a token. Run again, it keeps the
-- record it finds already the candidate's (a proclamation may have
-- followed it) and returns 1 again.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local c, err = counter(KEYS[2])
if not c then
  return err
end
if c < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if redis.pcall('HGET', KEYS[3], 'owner') ~= ARGV[1] then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'owner', ARGV[1], 'identity', ARGV[3], 'term', ARGV[2], 'seq', '0')
  redis.pcall('PUBLISH', ARGV[4], ARGV[2])
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[3], pttl)
end
return 1
