-- SPDX-License-Identifier: Apache-2.0
-- A batch of puts. ARGV: P n (tube pri delay_ms ttr_ms body)... [stride offset]
-- Reply: {first id, now}; the ids follow in order, `stride` apart. A shard of S (redis_shards.h)
-- gives stride S and offset its number: its counter's n-th id is n * S + offset. Without them 1, 0.
local n = tonumber(ARGV[2])
local stride, offset = tonumber(ARGV[3 + 5 * n] or '1'), tonumber(ARGV[4 + 5 * n] or '0')
local now = now_ms()
local first = (redis.call('INCRBY', P .. 'ids', n) - n + 1) * stride + offset
local tubes, order = {}, {}  -- tube -> {puts, when to announce}
for i = 1, n do
  local a = 2 + (i - 1) * 5
  local tube, pri, delay = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local m = string.format('%020d', first + (i - 1) * stride)
  local j = {'r', tube, pri, tonumber(ARGV[a + 4]), now, delay, 0, 0, 0, 0, 0, 0, ARGV[a + 5]}
  local at = now
  if delay > 0 then
    j[ST], j[DUE] = 'd', ends_in(delay)
    at = j[DUE]
    timer(tube, 'd', dmember(m, pri), at)
  else
    ready_in(tube, m, pri, now)
  end
  save(m, j)
  local t = tubes[tube]
  if not t then
    t = {0, at}
    tubes[tube] = t
    order[#order + 1] = tube
  end
  t[1] = t[1] + 1
  if at < t[2] then t[2] = at end
end
flush()
-- one event per tube, for its earliest job: a node that claims then learns the next due time
for _, tube in ipairs(order) do
  local t = tubes[tube]
  if redis.call('HINCRBY', tk(tube, 's'), 'total', t[1]) == t[1] then
    add_tube(tube)  -- a new tube (a dropped one starts again)
  end
  publish(tube, t[2])
end
return {first, now}
