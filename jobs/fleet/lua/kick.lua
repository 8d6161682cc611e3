-- SPDX-License-Identifier: Apache-2.0
-- kick. ARGV: P tube bound kind: 'b' buried or 'd' delayed jobs, '-' buried if the tube has
-- any (the first script of a kick; RedisStore::kick keeps to the kind it answers).
-- Reply: {count, now, kind}
local tube, bound, kind = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
if bound <= 0 then return {0, now, kind} end
promote(now, MAXP)
flush()
if kind == '-' then kind = redis.call('ZCARD', tk(tube, 'b')) > 0 and 'b' or 'd' end
local ms = redis.call('ZRANGE', tk(tube, kind), 0, S(bound - 1))
if kind == 'd' then
  for i, dm in ipairs(ms) do ms[i] = did(dm) end
end
load_many(ms)
local count = 0
for _, m in ipairs(ms) do
  local j = REC[m]
  if j then
    take_out(m, j)
    j[KCK] = j[KCK] + 1
    to_ready(m, j)
    count = count + 1
  end
end
if count > 0 then publish(tube, now) end
return fin({count, now, kind})
