-- SPDX-License-Identifier: Apache-2.0
-- A batch of deletes. ARGV: P n (id token)...  Reply: {now, (1|0)...}
local n = tonumber(ARGV[2])
local now = nil
local function clock()
  if not now then now = now_ms() end
  return now
end
local ms = {}
for i = 1, n do ms[i] = ARGV[1 + 2 * i] end
load_many(ms)
local out, deleted, order = {0}, {}, {}
-- The common case, a holder deleting its job, skips the buffers: per tube one ZREM of its
-- reserved zset, and one HDEL of the records, written before flush() sets the due index.
local held, hdel, nh = {}, {}, 0
for i = 1, n do
  local m, j, ok = ms[i], REC[ms[i]], 0
  -- Only a lease needs the clock: one that ran out times out first (counted, as beanstalkd
  -- does), and then anyone may delete the job; else only its holder may. A delay that ended
  -- or not, the job goes either way, so it is not settled.
  local fast = false
  if j and j[ST] == 'x' then
    if j[DUE] <= clock() then
      expire(m, j)
    elseif not holds(j, ARGV[2 + 2 * i]) then
      j = nil
    else
      fast = true
    end
  end
  if fast then
    local l = held[j[TUBE]]
    if not l then
      l = {}
      held[j[TUBE]] = l
      TIMED[j[TUBE]] = true
    end
    l[#l + 1] = m
    nh = nh + 1
    hdel[nh] = m
    REC[m] = false  -- a second delete of it in this batch finds nothing
  elseif j then
    take_out(m, j)
    save(m, false)
  end
  if j then
    if not deleted[j[TUBE]] then
      deleted[j[TUBE]] = 0
      order[#order + 1] = j[TUBE]
    end
    deleted[j[TUBE]] = deleted[j[TUBE]] + 1
    ok = 1
  end
  out[1 + i] = ok
end
for tube, l in pairs(held) do calln('ZREM', tk(tube, 'x'), l, 1) end
if nh > 0 then calln('HDEL', J, hdel, 1) end
flush()
for _, tube in ipairs(order) do
  drop_if_empty(tube, redis.call('HINCRBY', tk(tube, 's'), 'del', deleted[tube]), clock)
end
out[1] = now or 0
return out
