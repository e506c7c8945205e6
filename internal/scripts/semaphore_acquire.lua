-- semaphore_acquire: claim one slot of a semaphore for one owner.
-- counter() is in counter.lua.
--
-- KEYS[1..n]: the semaphore's slot keys, in the order the client wants
-- them tried (n is the limit).
-- KEYS[n+1]: the semaphore's limit record.
-- KEYS[n+2..2n+1]: for a fenced semaphore, the slots' fencing counters, in
-- the order of the slots; absent otherwise.
-- ARGV[1]: the owner's random value.
-- ARGV[2]: the time to live in milliseconds.
-- ARGV[3]: the limit n, a decimal integer.
--
-- Returns the position i in KEYS (1..n) of the slot that holds ARGV[1]
-- after it ran: the slot that already held it, keeping its TTL, or else
-- the first free one, set with the TTL; with counters, {i, counter}, the
-- counter of that slot (0 when it does not exist). Returns 0 when every
-- slot is held by others; {'limit', stored} when the limit record holds
-- another limit; an error reply when the record or the slot's counter
-- holds something else. On 0, {'limit', ...} or an error nothing was
-- touched.
--
-- Finding the owner's own value first makes the script idempotent: a
-- Redis client that re-sends the command gets the slot the first run
-- claimed, and no second one. GET goes through pcall: a key of another
-- type is someone else's. On a grant the record is set to the limit, with
-- a TTL at least that of every slot it saw held, so that it lasts as long
-- as any permit admitted under it (semaphore_extend.lua keeps it so).
local n = tonumber(ARGV[3])
local record = KEYS[n + 1]
local stored = redis.pcall('GET', record)
if stored and type(stored) ~= 'string' then
  return redis.error_reply('locksmith: a semaphore limit record holds something other than a limit')
end
if stored and stored ~= ARGV[3] then
  return {'limit', stored}
end
local mine, free = nil, nil
local longest = tonumber(ARGV[2])
for i = 1, n do
  local v = redis.pcall('GET', KEYS[i])
  if v == ARGV[1] then
    mine = i
  elseif not v then
    free = free or i
  else
    longest = math.max(longest, redis.call('PTTL', KEYS[i]))
  end
end
local slot = mine or free
if not slot then
  return 0
end
local token = nil
if #KEYS > n + 1 then
  local c, err = counter(KEYS[n + 1 + slot])
  if not c then
    return err
  end
  token = c
end
if not mine then
  redis.call('SET', KEYS[slot], ARGV[1], 'PX', ARGV[2])
end
if redis.call('PTTL', record) < longest then
  redis.call('SET', record, ARGV[3], 'PX', longest)
end
if token then
  return {slot, token}
end
return slot
