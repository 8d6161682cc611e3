-- SPDX-License-Identifier: Apache-2.0
-- A batch of reserves, one script for many requests. ARGV: P k n tube...
-- Reply: {now, more, tube, next known (0|1), next, claims, (id, token, body, lease, delay_due)...}:
-- up to k claims (k > 1 only if n = 1).
local k, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local woke = promote_quietly(now, MAXP)
local best, best_pri, best_tube, nxt = nil, nil, nil, nil
local taken, tube_of = {}, nil
local pus = {}
local function consider(t) if nxt == nil or t < nxt then nxt = t end end
-- when the next job of these tubes may come due (read only when needed, to save commands)
local function next_due()
  for i = 1, n do
    local tube = ARGV[3 + i]
    local d = redis.call('ZRANGE', tk(tube, 'd'), 0, 0, 'WITHSCORES')
    if d[2] then consider(math.max(tonumber(d[2]), pus[i])) end
    local x = redis.call('ZRANGE', tk(tube, 'x'), 0, 0, 'WITHSCORES')
    if x[2] then consider(math.max(tonumber(x[2]), pus[i])) end
  end
  return nxt or -1
end
for i = 1, n do
  local tube = ARGV[3 + i]
  local pu = tonumber(redis.call('HGET', tk(tube, 's'), 'pu') or '0')
  pus[i] = pu
  flush_key(tk(tube, 'r'))
  flush_key(tk(tube, 'a'))  -- the claims below take their jobs out of it directly
  if n == 1 and pu <= now then
    -- one tube: take its best k at once
    local top = redis.call('ZPOPMIN', tk(tube, 'r'), k)
    for x = 1, #top, 2 do taken[#taken + 1] = top[x] end
    tube_of = tube
  else
    local top = redis.call('ZRANGE', tk(tube, 'r'), 0, 0, 'WITHSCORES')
    if top[1] then
      if pu > now then
        consider(pu)
      else
        local p = tonumber(top[2])
        if best == nil or p < best_pri or (p == best_pri and top[1] < best) then
          best, best_pri, best_tube = top[1], p, tube
        end
      end
    end
  end
end
if best then
  redis.call('ZREM', tk(best_tube, 'r'), best)
  taken, tube_of = {best}, best_tube
end
if #taken > 0 then calln('ZREM', tk(tube_of, 'a'), taken, 1) end
-- {now, more, tube, next known (0|1), next, claims, (id, token, body, lease, delay due)...}
local out = {now, 0, '', 0, -1, 0}
load_many(taken)
-- The claims skip the buffers: flush() first (what promotion changed, a lease that ran out
-- among them), then one ZADD of the leases, one HSET of the records, and the due index lowered
-- to the first new lease end if it is earlier (ZADD LT).
flush()
local za, hs, first = {}, {}, nil
for _, m in ipairs(taken) do
  local j = REC[m]
  if j then
    local lease = lease_out(m, j, now, out)
    za[#za + 1] = S(lease)
    za[#za + 1] = m
    hs[#hs + 1] = m
    hs[#hs + 1] = cmsgpack.pack(j)
    if first == nil or lease < first then first = lease end
    out[6] = out[6] + 1
  end
end
if first then
  calln('ZADD', tk(tube_of, 'x'), za, 2)
  calln('HSET', J, hs, 2)
  redis.call('ZADD', DUE_IX, 'LT', S(first), tube_of)
  redis.call('INCRBY', tk(tube_of, 'n'), out[6])  -- deliveries, for the web console
end
if out[6] > 0 then
  out[2], out[3] = redis.call('ZCARD', tk(tube_of, 'r')), tube_of
  -- one tube left without ready jobs: say when the next comes due, so that the node's other
  -- waiters for this tube wait for that instead of each running a claim that finds nothing
  if n == 1 and out[2] == 0 then out[4], out[5] = 1, next_due() end
  -- the claimed tube's event would only send other waiters to find it empty
  if out[2] == 0 then woke[tube_of] = nil end
else
  out[4], out[5] = 1, next_due()
end
announce(woke, now)
return out
