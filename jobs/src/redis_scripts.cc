// SPDX-License-Identifier: Apache-2.0
// The store's Lua scripts. Keys (P = the prefix):
//   P ids, P bseq             counters: job ids (INCRBY per batch of puts), bury order
//   P timeouts                counter: leases that ran out
//   P due                     zset tube -> the tube's first timer: the earliest delay end (its d
//                             zset's head) or lease end (its x zset's head), Redis time
//   P tubes                   set of tube names
//   P ev                      pub/sub channel: "<due ms> <tube>" when a tube gets or will get work
//   P j                       hash: id (zero-padded to 20 digits, as every zset member) -> the
//                             job's record, a msgpack array (fields ST..BODY in the prologue)
//   P t:<tube>:r|d|x|b        zsets: ready (score pri; equal scores order by id), delayed (due;
//                             member '<pri, 10 digits>:<id>'), reserved (lease end), buried
//                             (bury order); a job promoted from d to r keeps state 'd' in its
//                             record (its due time past) until a command on it settles it
//   P t:<tube>:s              hash: total, del (deletes), pc (pauses), pu (paused until), pms
// Numbers going back into Redis are formatted with %d: Lua would print large ones as 1e+13.
#include "redis_scripts.h"

#include <string>

namespace wheel::jobs::redis_scripts {
std::string put() {
  return with_prologue(R"LUA(
local n = tonumber(ARGV[2])
local now = now_ms()
local first = redis.call('INCRBY', P .. 'ids', n) - n + 1
local tubes, order = {}, {}  -- tube -> {puts, when to announce}
for i = 1, n do
  local a = 2 + (i - 1) * 5
  local tube, pri, delay = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local m = string.format('%020d', first + i - 1)
  local j = {'r', tube, pri, tonumber(ARGV[a + 4]), now, delay, 0, 0, 0, 0, 0, 0, ARGV[a + 5]}
  local at = now
  if delay > 0 then
    j[ST], j[DUE] = 'd', ends_in(delay)
    at = j[DUE]
    timer(tube, 'd', dmember(m, pri), at)
  else
    ix(tk(tube, 'r'), m, pri)
  end
  save(m, j)
  local t = tubes[tube]
  if not t then
    t = {0, at}
    tubes[tube] = t
    order[#order + 1] = tube
  end
  t[1] = t[1] + 1
  if at < t[2] then t[2] = at end
end
flush()
-- one event per tube, for its earliest job: a node that claims then learns the next due time
for _, tube in ipairs(order) do
  local t = tubes[tube]
  if redis.call('HINCRBY', tk(tube, 's'), 'total', t[1]) == t[1] then
    add_tube(tube)  -- a new tube (a dropped one starts again)
  end
  publish(tube, t[2])
end
return {first, now}
)LUA");
}

std::string reserve() {
  return with_prologue(R"LUA(
local k, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local woke = promote_quietly(now, MAXP)
local best, best_pri, best_tube, nxt = nil, nil, nil, nil
local taken, tube_of = {}, nil
local pus = {}
local function consider(t) if nxt == nil or t < nxt then nxt = t end end
-- when the next job of these tubes may come due (read only when needed, to save commands)
local function next_due()
  for i = 1, n do
    local tube = ARGV[3 + i]
    local d = redis.call('ZRANGE', tk(tube, 'd'), 0, 0, 'WITHSCORES')
    if d[2] then consider(math.max(tonumber(d[2]), pus[i])) end
    local x = redis.call('ZRANGE', tk(tube, 'x'), 0, 0, 'WITHSCORES')
    if x[2] then consider(math.max(tonumber(x[2]), pus[i])) end
  end
  return nxt or -1
end
for i = 1, n do
  local tube = ARGV[3 + i]
  local pu = tonumber(redis.call('HGET', tk(tube, 's'), 'pu') or '0')
  pus[i] = pu
  flush_key(tk(tube, 'r'))
  if n == 1 and pu <= now then
    -- one tube: take its best k at once
    local top = redis.call('ZPOPMIN', tk(tube, 'r'), k)
    for x = 1, #top, 2 do taken[#taken + 1] = top[x] end
    tube_of = tube
  else
    local top = redis.call('ZRANGE', tk(tube, 'r'), 0, 0, 'WITHSCORES')
    if top[1] then
      if pu > now then
        consider(pu)
      else
        local p = tonumber(top[2])
        if best == nil or p < best_pri or (p == best_pri and top[1] < best) then
          best, best_pri, best_tube = top[1], p, tube
        end
      end
    end
  end
end
if best then
  redis.call('ZREM', tk(best_tube, 'r'), best)
  taken, tube_of = {best}, best_tube
end
-- {now, more, tube, next known (0|1), next, claims, (id, token, body, lease, delay due)...}
local out = {now, 0, '', 0, -1, 0}
load_many(taken)
-- The claims skip the buffers: flush() first (what promotion changed, a lease that ran out
-- among them), then one ZADD of the leases, one HSET of the records, and the due index lowered
-- to the first new lease end if it is earlier (ZADD LT).
flush()
local za, hs, first = {}, {}, nil
for _, m in ipairs(taken) do
  local j = REC[m]
  if j then
    local lease = lease_out(m, j, now, out)
    za[#za + 1] = S(lease)
    za[#za + 1] = m
    hs[#hs + 1] = m
    hs[#hs + 1] = cmsgpack.pack(j)
    if first == nil or lease < first then first = lease end
    out[6] = out[6] + 1
  end
end
if first then
  calln('ZADD', tk(tube_of, 'x'), za, 2)
  calln('HSET', J, hs, 2)
  redis.call('ZADD', DUE_IX, 'LT', S(first), tube_of)
end
if out[6] > 0 then
  out[2], out[3] = redis.call('ZCARD', tk(tube_of, 'r')), tube_of
  -- one tube left without ready jobs: say when the next comes due, so that the node's other
  -- waiters for this tube wait for that instead of each running a claim that finds nothing
  if n == 1 and out[2] == 0 then out[4], out[5] = 1, next_due() end
  -- the claimed tube's event would only send other waiters to find it empty
  if out[2] == 0 then woke[tube_of] = nil end
else
  out[4], out[5] = 1, next_due()
end
announce(woke, now)
return out
)LUA");
}

std::string reserve_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job()
if not j or j[ST] == 'x' then return fin({now, 0, '', 0, -1, 0}) end
take_out(m, j)
local out = {now, 0, '', 0, -1, 1}
claim(m, j, now, out)
return fin(out)
)LUA");
}

std::string remove() {
  return with_prologue(R"LUA(
local n = tonumber(ARGV[2])
local now = nil
local function clock()
  if not now then now = now_ms() end
  return now
end
local ms = {}
for i = 1, n do ms[i] = ARGV[1 + 2 * i] end
load_many(ms)
local out, deleted, order = {0}, {}, {}
-- The common case, a holder deleting its job, skips the buffers: per tube one ZREM of its
-- reserved zset, and one HDEL of the records, written before flush() sets the due index.
local held, hdel, nh = {}, {}, 0
for i = 1, n do
  local m, j, ok = ms[i], REC[ms[i]], 0
  -- Only a lease needs the clock: one that ran out times out first (counted, as beanstalkd
  -- does), and then anyone may delete the job; else only its holder may. A delay that ended
  -- or not, the job goes either way, so it is not settled.
  local fast = false
  if j and j[ST] == 'x' then
    if j[DUE] <= clock() then
      expire(m, j)
    elseif not holds(j, ARGV[2 + 2 * i]) then
      j = nil
    else
      fast = true
    end
  end
  if fast then
    local l = held[j[TUBE]]
    if not l then
      l = {}
      held[j[TUBE]] = l
      TIMED[j[TUBE]] = true
    end
    l[#l + 1] = m
    nh = nh + 1
    hdel[nh] = m
    REC[m] = false  -- a second delete of it in this batch finds nothing
  elseif j then
    take_out(m, j)
    save(m, false)
  end
  if j then
    if not deleted[j[TUBE]] then
      deleted[j[TUBE]] = 0
      order[#order + 1] = j[TUBE]
    end
    deleted[j[TUBE]] = deleted[j[TUBE]] + 1
    ok = 1
  end
  out[1 + i] = ok
end
for tube, l in pairs(held) do calln('ZREM', tk(tube, 'x'), l, 1) end
if nh > 0 then calln('HDEL', J, hdel, 1) end
flush()
for _, tube in ipairs(order) do
  drop_if_empty(tube, redis.call('HINCRBY', tk(tube, 's'), 'del', deleted[tube]), clock)
end
out[1] = now or 0
return out
)LUA");
}

std::string release() {
  return with_prologue(R"LUA(
local tok, pri, delay, counted = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
if pri ~= '-1' then j[PRI] = tonumber(pri) end
take_out(m, j)
if counted == '1' then j[REL] = j[REL] + 1 end
if delay > 0 then
  j[ST], j[DUE], j[DL] = 'd', ends_in(delay), delay
  timer(j[TUBE], 'd', dmember(m, j[PRI]), j[DUE])
  save(m, j)
  publish(j[TUBE], j[DUE])
else
  to_ready(m, j)
  publish(j[TUBE], now)
end
return fin({1, now})
)LUA");
}

std::string bury() {
  return with_prologue(R"LUA(
local tok, pri = ARGV[3], ARGV[4]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
take_out(m, j)
local seq = redis.call('INCR', P .. 'bseq')
ix(tk(j[TUBE], 'b'), m, seq)
j[ST], j[DUE], j[PRI], j[BUR] = 'b', 0, tonumber(pri), j[BUR] + 1
save(m, j)
return fin({1, now})
)LUA");
}

std::string touch() {
  return with_prologue(R"LUA(
local tok = ARGV[3]
local m, now, j = the_job()
if not holds(j, tok) then return fin({0, now}) end
j[DUE] = ends_in(j[TTR])
timer(j[TUBE], 'x', m, j[DUE])
save(m, j)
return fin({1, j[DUE], now})
)LUA");
}

// ARGV: tube, bound, kind: 'b' buried or 'd' delayed jobs, '-' buried if the tube has any
// (the first script of a kick; RedisStore::kick keeps to the kind it answers).
std::string kick() {
  return with_prologue(R"LUA(
local tube, bound, kind = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
if bound <= 0 then return {0, now, kind} end
promote(now, MAXP)
flush()
if kind == '-' then kind = redis.call('ZCARD', tk(tube, 'b')) > 0 and 'b' or 'd' end
local ms = redis.call('ZRANGE', tk(tube, kind), 0, S(bound - 1))
if kind == 'd' then
  for i, dm in ipairs(ms) do ms[i] = did(dm) end
end
load_many(ms)
local count = 0
for _, m in ipairs(ms) do
  local j = REC[m]
  if j then
    take_out(m, j)
    j[KCK] = j[KCK] + 1
    to_ready(m, j)
    count = count + 1
  end
end
if count > 0 then publish(tube, now) end
return fin({count, now, kind})
)LUA");
}

std::string kick_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job()
if not j or (j[ST] ~= 'b' and j[ST] ~= 'd') then return fin({0, now}) end
take_out(m, j)
j[KCK] = j[KCK] + 1
to_ready(m, j)
publish(j[TUBE], now)
return fin({1, now})
)LUA");
}

std::string peek() {
  return with_prologue(R"LUA(
local m, _, j = the_job()
if not j then return fin({0}) end
return fin({1, tonumber(m), j[BODY]})
)LUA");
}

std::string peek_tube() {
  return with_prologue(R"LUA(
local tube, which = ARGV[2], ARGV[3]
promote(now_ms(), MAXP)
flush()
local top = redis.call('ZRANGE', tk(tube, which), 0, 0)
if not top[1] then return {0} end
local m = which == 'd' and did(top[1]) or top[1]
local j = load(m)
if not j then return {0} end
return {1, tonumber(m), j[BODY]}
)LUA");
}

std::string stats_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job()
if not j then return fin({0}) end
local left = 0
if j[ST] == 'x' or j[ST] == 'd' then left = math.max(0, j[DUE] - now) end
return fin({1, j[TUBE], j[ST], S(j[PRI]), S(now - j[CT]), S(j[DL]), S(j[TTR]), S(left),
            S(j[RES]), S(j[TO]), S(j[REL]), S(j[BUR]), S(j[KCK])})
)LUA");
}

std::string stats_tube() {
  return with_prologue(R"LUA(
local tube, known = ARGV[2], ARGV[3]
local now = now_ms()
promote(now, MAXP)
flush()
if redis.call('SISMEMBER', P .. 'tubes', tube) == 0 and known ~= '1' then return {0} end
local s = redis.call('HMGET', tk(tube, 's'), 'total', 'del', 'pc', 'pu', 'pms')
local pu = tonumber(s[4] or '0')
local pause, left = 0, 0
if pu > now then pause, left = tonumber(s[5] or '0'), pu - now end
return {1, redis.call('ZCOUNT', tk(tube, 'r'), '-inf', '(1024'), redis.call('ZCARD', tk(tube, 'r')),
        redis.call('ZCARD', tk(tube, 'x')), redis.call('ZCARD', tk(tube, 'd')),
        redis.call('ZCARD', tk(tube, 'b')), tonumber(s[1] or '0'), tonumber(s[2] or '0'),
        tonumber(s[3] or '0'), pause, left}
)LUA");
}

std::string stats() {
  return with_prologue(R"LUA(
promote(now_ms(), MAXP)
flush()
local u, r, x, d, b = 0, 0, 0, 0, 0
local tubes = redis.call('SMEMBERS', P .. 'tubes')
for _, tube in ipairs(tubes) do
  u = u + redis.call('ZCOUNT', tk(tube, 'r'), '-inf', '(1024')
  r = r + redis.call('ZCARD', tk(tube, 'r'))
  x = x + redis.call('ZCARD', tk(tube, 'x'))
  d = d + redis.call('ZCARD', tk(tube, 'd'))
  b = b + redis.call('ZCARD', tk(tube, 'b'))
end
return {u, r, x, d, b, tonumber(redis.call('GET', P .. 'timeouts') or '0'),
        tonumber(redis.call('GET', P .. 'ids') or '0'), #tubes}
)LUA");
}

std::string pause_tube() {
  return with_prologue(R"LUA(
local tube, delay, known = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
if redis.call('SISMEMBER', P .. 'tubes', tube) == 0 then
  if known ~= '1' then return {0, now} end
  add_tube(tube)
end
local until_ms = 0
if delay > 0 then until_ms = ends_in(delay) end
redis.call('HSET', tk(tube, 's'), 'pu', S(until_ms), 'pms', S(delay))
redis.call('HINCRBY', tk(tube, 's'), 'pc', 1)
publish(tube, delay > 0 and until_ms or now)
return {1, now}
)LUA");
}

std::string scan() {
  return with_prologue(R"LUA(
local limit, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local function first_timer()
  local head = redis.call('ZRANGE', DUE_IX, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or -1
end
local first = first_timer()
if first >= 0 and first <= now then
  promote(now, limit)
  flush()
  first = first_timer()
end
local out = {now, first}
for i = 1, n do
  local tube = ARGV[3 + i]
  local ready, nxt = 0, -1
  if redis.call('ZCARD', tk(tube, 'r')) > 0 then
    local pu = tonumber(redis.call('HGET', tk(tube, 's'), 'pu') or '0')
    if pu > now then nxt = pu else ready = 1 end
  end
  out[#out + 1] = {tube, ready, nxt}
end
return out
)LUA");
}

}  // namespace wheel::jobs::redis_scripts
