-- SPDX-License-Identifier: Apache-2.0
-- peek. ARGV: P id  Reply: {1, id, body} | {0}
local m, _, j = the_job()
if not j then return fin({0}) end
return fin({1, tonumber(m), j[BODY]})
