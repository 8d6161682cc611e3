-- SPDX-License-Identifier: Apache-2.0
-- reserve-job. ARGV: P id  Reply: that of reserve.lua, with 0 or 1 claim.
local m, now, j = the_job()
if not j or j[ST] == 'x' then return fin({now, 0, '', 0, -1, 0}) end
take_out(m, j)
local out = {now, 0, '', 0, -1, 1}
claim(m, j, now, out)
redis.call('INCR', tk(j[TUBE], 'n'))  -- deliveries, for the web console
return fin(out)
