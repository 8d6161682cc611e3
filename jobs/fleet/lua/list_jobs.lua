-- SPDX-License-Identifier: Apache-2.0
-- The web console's list and search of one tube's jobs in one state (reads only).
-- ARGV: P tube which(r|d|b) scan preview needle limit offset
-- Looks at `scan` jobs of the state, after the first `offset` in its order (ready: priority, then id; delayed:
-- due time; buried: bury order) and keeps those whose body holds `needle` (plain text; '': every
-- one), at most `limit`, each with the first `preview` bytes of its body.
-- Reply: {looked, total, then per job: id, pri, size, time_left, preview}
local tube, which = ARGV[2], ARGV[3]
local scan, preview, needle, limit = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local offset = tonumber(ARGV[8] or '0')
local now = now_ms()
promote(now, MAXP)
flush()
local key = tk(tube, which)
local members = redis.call('ZRANGE', key, offset, offset + scan - 1)
local ms = {}
for i, m in ipairs(members) do
  if which == 'd' then ms[i] = did(m) else ms[i] = m end
end
if #ms > 0 then load_many(ms) end
local out = {0, redis.call('ZCARD', key)}
local looked, found = 0, 0
for _, m in ipairs(ms) do
  if found >= limit then break end
  looked = looked + 1
  local j = REC[m]
  if j then
    local body = j[BODY]
    if needle == '' or string.find(body, needle, 1, true) then
      found = found + 1
      local left = 0
      if which == 'd' then left = math.max(0, j[DUE] - now) end
      out[#out + 1] = m
      out[#out + 1] = S(j[PRI])
      out[#out + 1] = S(#body)
      out[#out + 1] = S(left)
      out[#out + 1] = string.sub(body, 1, preview)
    end
  end
end
out[1] = looked
return out
