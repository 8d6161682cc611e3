-- SPDX-License-Identifier: Apache-2.0
-- peek-ready/-delayed/-buried. ARGV: P tube which(r|d|b)  Reply: {1, id, body} | {0}
local tube, which = ARGV[2], ARGV[3]
promote(now_ms(), MAXP)
flush()
local top = redis.call('ZRANGE', tk(tube, which), 0, 0)
if not top[1] then return {0} end
local m = which == 'd' and did(top[1]) or top[1]
local j = load(m)
if not j then return {0} end
return {1, tonumber(m), j[BODY]}
