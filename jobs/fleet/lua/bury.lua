-- SPDX-License-Identifier: Apache-2.0
-- bury. ARGV: P id token pri  Reply: {1|0, now}
local tok, pri = ARGV[3], ARGV[4]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
take_out(m, j)
local seq = redis.call('INCR', P .. 'bseq')
ix(tk(j[TUBE], 'b'), m, seq)
j[ST], j[DUE], j[PRI], j[BUR] = 'b', 0, tonumber(pri), j[BUR] + 1
save(m, j)
return fin({1, now})
