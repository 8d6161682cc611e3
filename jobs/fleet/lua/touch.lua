-- SPDX-License-Identifier: Apache-2.0
-- touch. ARGV: P id token  Reply: {1, lease, now} | {0, now}
local tok = ARGV[3]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
j[DUE] = ends_in(j[TTR])
timer(j[TUBE], 'x', m, j[DUE])
save(m, j)
return fin({1, j[DUE], now})
