// SPDX-License-Identifier: Apache-2.0
// The store's scripts for the fleet's own operations (not beanstalkd commands), on the prologue
// of redis_scripts.cc.
#include "redis_scripts.h"

namespace wheel::jobs::redis_scripts {

// A node leaving gives its clients' jobs back: each lease whose token still holds goes to
// ready with its priority (not counted as a release, as a client hanging up); a lease that ran
// out or passed to another holder is left alone. One event per tube that got work.
std::string give_back() {
  return with_prologue(R"LUA(
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
)LUA");
}

}  // namespace wheel::jobs::redis_scripts
