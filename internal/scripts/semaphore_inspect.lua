-- semaphore_inspect: read a semaphore's slots and limit record without
-- changing anything.
--
-- KEYS[1..n]: the slot keys, in slot order.
-- KEYS[n+1]: the limit record.
-- ARGV: none.
--
-- Returns {record, type1, value1, pttl1, ..., typen, valuen, pttln}:
-- record is the record's value when it is a string and false otherwise;
-- for each slot, type is its Redis type ('none' when it does not exist),
-- value its value when it is a string and false otherwise, pttl its PTTL
-- (-2 absent, -1 no expiry).
local n = #KEYS - 1
local out = {false}
if redis.call('TYPE', KEYS[n + 1])['ok'] == 'string' then
  out[1] = redis.call('GET', KEYS[n + 1])
end
for i = 1, n do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local value = false
  if kind == 'string' then
    value = redis.call('GET', KEYS[i])
  end
  out[#out + 1] = kind
  out[#out + 1] = value
  out[#out + 1] = redis.call('PTTL', KEYS[i])
end
return out
