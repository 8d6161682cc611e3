-- SPDX-License-Identifier: Apache-2.0
-- A node leaving gives its clients' jobs back: each lease whose token still holds goes to
-- ready with its priority (not counted as a release, as a client hanging up); a lease that ran
-- out or passed to another holder is left alone. One event per tube that got work.
-- ARGV: P n (id token)...  Reply: {released, now}
local n = tonumber(ARGV[2])
local now = now_ms()
local ms = {}
for i = 1, n do ms[i] = ARGV[1 + 2 * i] end
load_many(ms)
local woke, count = {}, 0
for i = 1, n do
  local m, j = ms[i], REC[ms[i]]
  if j then settle(m, j, now) end
  if holds(j, ARGV[2 + 2 * i]) then
    take_out(m, j)
    to_ready(m, j)
    woke[j[TUBE]] = true
    count = count + 1
  end
end
announce(woke, now)
return fin({count, now})
