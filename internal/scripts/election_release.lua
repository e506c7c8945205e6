-- election_release: delete a leadership's lock key and record, if they
-- hold the owner's value, and tell the waiting candidates and observers.
--
-- KEYS[1]: the lock key.
-- KEYS[2]: the election's record.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the lock key's release channel (scripts.ReleaseChannel).
-- ARGV[3]: the channel on which changes of the leader are announced.
--
-- Returns 1 when the lock key holds no one's value after it ran (deleted,
-- or already gone), 0 when it belongs to another owner, which is left
-- alone. A record that is the owner's is deleted either way. Run again, it
-- finds both gone and returns 1. On the release channel it publishes, as
-- release.lua does, the first 16 hex digits of the SHA-1 of the value; on
-- the change channel it publishes that the record went.
local tag = string.sub(redis.sha1hex(ARGV[1]), 1, 16)
if redis.pcall('HGET', KEYS[2], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[2])
  redis.pcall('PUBLISH', ARGV[3], '0')
end
local v = redis.pcall('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.pcall('PUBLISH', ARGV[2], tag)
  return 1
elseif not v then
  return 1
end
return 0
