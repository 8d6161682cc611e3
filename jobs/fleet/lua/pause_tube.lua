-- SPDX-License-Identifier: Apache-2.0
-- pause-tube. ARGV: P tube delay_ms known(0|1)  Reply: {1|0, now}
local tube, delay, known = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
if redis.call('SISMEMBER', P .. 'tubes', tube) == 0 then
  if known ~= '1' then return {0, now} end
  add_tube(tube)
end
local until_ms = 0
if delay > 0 then until_ms = ends_in(delay) end
redis.call('HSET', tk(tube, 's'), 'pu', S(until_ms), 'pms', S(delay))
redis.call('HINCRBY', tk(tube, 's'), 'pc', 1)
publish(tube, delay > 0 and until_ms or now)
return {1, now}
