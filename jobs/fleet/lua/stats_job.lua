-- SPDX-License-Identifier: Apache-2.0
-- stats-job. ARGV: P id
-- Reply: {1, tube, state, pri, age, delay, ttr, left, reserves, timeouts, releases, buries,
-- kicks} | {0}
local m, now, j = the_job()
if not j then return fin({0}) end
local left = 0
if j[ST] == 'x' or j[ST] == 'd' then left = math.max(0, j[DUE] - now) end
return fin({1, j[TUBE], j[ST], S(j[PRI]), S(now - j[CT]), S(j[DL]), S(j[TTR]), S(left),
            S(j[RES]), S(j[TO]), S(j[REL]), S(j[BUR]), S(j[KCK])})
