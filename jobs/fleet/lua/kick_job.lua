-- SPDX-License-Identifier: Apache-2.0
-- kick-job. ARGV: P id  Reply: {1|0, now}
local m, now, j = the_job()
if not j or (j[ST] ~= 'b' and j[ST] ~= 'd') then return fin({0, now}) end
take_out(m, j)
j[KCK] = j[KCK] + 1
to_ready(m, j)
publish(j[TUBE], now)
return fin({1, now})
