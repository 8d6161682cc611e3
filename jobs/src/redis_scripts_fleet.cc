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
local woke, count = {}, 0
for i = 1, n do
  local m, tok = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  settle(m, now)
  local j = redis.call('HMGET', jk(m), 'st', 'tube', 'tok', 'pri')
  if holds(j[1], j[3], tok) then
    take_out(m, 'x', j[2])
    to_ready(m, j[2], j[4])
    woke[j[2]] = true
    count = count + 1
  end
end
for tube in pairs(woke) do publish(tube, now) end
return {count, now}
)LUA");
}

}  // namespace wheel::jobs::redis_scripts
