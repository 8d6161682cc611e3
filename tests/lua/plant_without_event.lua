-- SPDX-License-Identifier: Apache-2.0
-- Test support (wheel_jobs_fleet_scan_test.cc): a job written straight into Redis in the
-- store's layout (prefix wj:, jobs/fleet/lua/prologue.lua), ready (delay_ms 0) or due delay_ms
-- after Redis's now, with no event published. ARGV: tube delay_ms. Reply: the job's id.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = redis.call('INCR', 'wj:ids')
local m = string.format('%020d', id)
local delay = tonumber(ARGV[2])
local st, due = 'r', '0'
if delay > 0 then st, due = 'd', string.format('%d', now + delay) end
-- the record: {state, tube, pri, ttr, created, delay, due, reserves, timeouts, releases,
-- buries, kicks, body}
redis.call('HSET', 'wj:j', m, cmsgpack.pack({st, ARGV[1], 0, 60000, now, delay,
                                             tonumber(due), 0, 0, 0, 0, 0, 'lost'}))
if delay > 0 then
  redis.call('ZADD', 'wj:t:' .. ARGV[1] .. ':d', due, '0000000000:' .. m)  -- priority 0
  -- the tube's first timer in the due index, if this one is earlier
  local first = redis.call('ZSCORE', 'wj:due', ARGV[1])
  if not first or tonumber(first) > tonumber(due) then redis.call('ZADD', 'wj:due', due, ARGV[1]) end
else
  redis.call('ZADD', 'wj:t:' .. ARGV[1] .. ':r', 0, m)
end
redis.call('SADD', 'wj:tubes', ARGV[1])
redis.call('HINCRBY', 'wj:t:' .. ARGV[1] .. ':s', 'total', 1)
return id
