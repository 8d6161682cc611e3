-- SPDX-License-Identifier: Apache-2.0
-- release. ARGV: P id token pri(-1 keeps) delay_ms counted(0|1)  Reply: {1|0, now}
local tok, pri, delay, counted = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
if pri ~= '-1' then j[PRI] = tonumber(pri) end
take_out(m, j)
if counted == '1' then j[REL] = j[REL] + 1 end
if delay > 0 then
  j[ST], j[DUE], j[DL] = 'd', ends_in(delay), delay
  timer(j[TUBE], 'd', dmember(m, j[PRI]), j[DUE])
  save(m, j)
  publish(j[TUBE], j[DUE])
else
  to_ready(m, j)
  publish(j[TUBE], now)
end
return fin({1, now})
