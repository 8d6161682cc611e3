-- SPDX-License-Identifier: Apache-2.0
-- The safety scan. ARGV: P limit n tube...
-- Reply: {now, first_timer|-1, {tube, ready(0|1), next}...}
local limit, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local function first_timer()
  local head = redis.call('ZRANGE', DUE_IX, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or -1
end
local first = first_timer()
if first >= 0 and first <= now then
  promote(now, limit)
  flush()
  first = first_timer()
end
local out = {now, first}
for i = 1, n do
  local tube = ARGV[3 + i]
  local ready, nxt = 0, -1
  if redis.call('ZCARD', tk(tube, 'r')) > 0 then
    local pu = tonumber(redis.call('HGET', tk(tube, 's'), 'pu') or '0')
    if pu > now then nxt = pu else ready = 1 end
  end
  out[#out + 1] = {tube, ready, nxt}
end
return out
