-- SPDX-License-Identifier: Apache-2.0
-- The web console's move: up to n jobs of tube `from` in one state (r|d|b), the first in its
-- order, put anew into tube `to` (new ids; body, priority and TTR kept; a delayed job keeps its
-- due time, a ready or buried one arrives ready) and deleted from `from`, all in this script: a
-- job is in one tube or the other, never both, never neither. ARGV: P from to which n
-- [stride offset] (put.lua's)
-- Reply: {moved, now, first new id (the others follow in order, `stride` apart) | 0}
local from, to, which, n = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local stride, offset = tonumber(ARGV[6] or '1'), tonumber(ARGV[7] or '0')
local now = now_ms()
promote(now, MAXP)
flush()
local ms = redis.call('ZRANGE', tk(from, which), 0, n - 1)
if which == 'd' then
  for i, dm in ipairs(ms) do ms[i] = did(dm) end
end
load_many(ms)
local olds = {}
for _, m in ipairs(ms) do
  if REC[m] then olds[#olds + 1] = m end
end
local count = #olds
if count == 0 then return fin({0, now, 0}) end
local first = (redis.call('INCRBY', P .. 'ids', count) - count + 1) * stride + offset
local earliest = nil
for i, m in ipairs(olds) do
  local j = REC[m]
  take_out(m, j)
  save(m, false)
  local nm = string.format('%020d', first + (i - 1) * stride)
  local nj = {'r', to, j[PRI], j[TTR], now, 0, 0, 0, 0, 0, 0, 0, j[BODY]}
  local at = now
  if j[ST] == 'd' and j[DUE] > now then
    nj[ST], nj[DL], nj[DUE] = 'd', j[DUE] - now, j[DUE]
    at = j[DUE]
    timer(to, 'd', dmember(nm, nj[PRI]), at)
  else
    ready_in(to, nm, nj[PRI], now)
  end
  save(nm, nj)
  if earliest == nil or at < earliest then earliest = at end
end
flush()
if redis.call('HINCRBY', tk(to, 's'), 'total', count) == count then add_tube(to) end
publish(to, earliest)
drop_if_empty(from, redis.call('HINCRBY', tk(from, 's'), 'del', count), function() return now end)
return {count, now, first}
