// SPDX-License-Identifier: Apache-2.0
// The store's Lua scripts. Keys (P = the prefix):
//   P ids, P tok, P bseq      INCR counters: job ids, fencing tokens, bury order
//   P timers                  zset id -> due ms of every delayed job and every lease (Redis time)
//   P tubes                   set of tube names
//   P ev                      pub/sub channel: "<due ms> <tube>" when a tube gets or will get work
//   P j:<id>                  hash per job (id zero-padded to 20 digits, as every zset member)
//   P t:<tube>:r|d|x|b        zsets: ready (score pri; equal scores order by id), delayed (due),
//                             reserved (lease end), buried (bury order)
//   P t:<tube>:s              hash: total, del (deletes), pc (pauses), pu (paused until), pms
// Numbers going back into Redis are formatted with %d: Lua would print large ones as 1e+13.
#include "redis_scripts.h"

#include "wheel/jobs/redis_store.h"

namespace wheel::jobs::redis_scripts {
namespace {

constexpr const char* kPrologue = R"LUA(
local P = ARGV[1]
local MAXP = MAX_PROMOTE
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function S(x) return string.format('%d', x) end
local function tk(tube, kind) return P .. 't:' .. tube .. ':' .. kind end
local function jk(m) return P .. 'j:' .. m end
local function publish(tube, due) redis.call('PUBLISH', P .. 'ev', S(due) .. ' ' .. tube) end
-- due: when a delay that ended was due (a ready job keeps it for its delivery lateness), else 0
local function to_ready(m, tube, pri, due)
  redis.call('ZADD', tk(tube, 'r'), pri, m)
  redis.call('HSET', jk(m), 'st', 'r', 'due', due or 0, 'tok', 0)
end
-- the timer of m is due: a delayed job or an expired lease becomes ready; returns its tube
local function expire(m)
  local j = redis.call('HMGET', jk(m), 'st', 'tube', 'pri', 'due')
  redis.call('ZREM', P .. 'timers', m)
  local delay_due = nil
  if j[1] == 'd' then
    redis.call('ZREM', tk(j[2], 'd'), m)
    delay_due = j[4]
  elseif j[1] == 'x' then
    redis.call('ZREM', tk(j[2], 'x'), m)
    redis.call('HINCRBY', jk(m), 'to', 1)
    redis.call('INCR', P .. 'timeouts')
  else
    return nil
  end
  to_ready(m, j[2], j[3], delay_due)
  return j[2]
end
-- every timer due by now (at most limit of them); returns the set of tubes that got work
local function promote_quietly(now, limit)
  local due = redis.call('ZRANGEBYSCORE', P .. 'timers', '-inf', S(now), 'LIMIT', 0, limit)
  local woke = {}
  for _, m in ipairs(due) do
    local tube = expire(m)
    if tube then woke[tube] = true end
  end
  return woke
end
local function announce(woke, now)
  for tube in pairs(woke) do publish(tube, now) end
end
-- promote_quietly, then one event per tube that got work
local function promote(now, limit) announce(promote_quietly(now, limit), now) end
-- one job's own timer, if due: what a command on one job sees is never stale
local function settle(m, now)
  local due = redis.call('ZSCORE', P .. 'timers', m)
  if due and tonumber(due) <= now then
    local tube = expire(m)
    if tube then publish(tube, now) end
  end
end
local function take_out(m, st, tube)
  redis.call('ZREM', tk(tube, st), m)
  if st == 'd' or st == 'x' then redis.call('ZREM', P .. 'timers', m) end
end
-- r.due (not sent by itself): when the delay that made the job ready was due, else 0
local function claim(m, tube, now)
  local j = redis.call('HMGET', jk(m), 'ttr', 'body', 'res', 'due')
  local lease = now + tonumber(j[1])
  local tok = redis.call('INCR', P .. 'tok')
  redis.call('ZADD', tk(tube, 'x'), S(lease), m)
  redis.call('ZADD', P .. 'timers', S(lease), m)
  redis.call('HSET', jk(m), 'st', 'x', 'due', S(lease), 'tok', S(tok),
             'res', S(tonumber(j[3] or '0') + 1))
  local r = {1, tonumber(m), tok, j[2], lease, now}
  r.due = tonumber(j[4] or '0')
  return r
end
local function holds(j_st, j_tok, tok)
  return j_st == 'x' and tonumber(j_tok) == tonumber(tok)
end
-- after a delete: drops a tube (not default) whose jobs are all deleted and that is not paused.
-- Jobs never change tube, so its puts (total) equal its deletes exactly when it is empty.
local function drop_if_empty(tube, deleted)
  if tube == 'default' then return end
  local s = redis.call('HMGET', tk(tube, 's'), 'total', 'pu')
  if tonumber(s[1] or '0') > deleted then return end
  if tonumber(s[2] or '0') > now_ms() then return end
  redis.call('SREM', P .. 'tubes', tube)
  redis.call('DEL', tk(tube, 's'))
end
-- the job a command names (ARGV[2]), its own timer settled first: m, now and its fields asked for
local function the_job(...)
  local m = ARGV[2]
  local now = now_ms()
  settle(m, now)
  return m, now, redis.call('HMGET', jk(m), ...)
end
)LUA";

}  // namespace

std::string with_prologue(const char* body) {
  // The promotion bound is the C++ constant, spliced in as text (scripts take no globals).
  std::string text(kPrologue);
  const std::string bound = std::to_string(kMaxPromotePerScript);
  text.replace(text.find("MAX_PROMOTE"), 11, bound);
  return text + body;
}

std::string put() {
  return with_prologue(R"LUA(
local tube, pri, delay, ttr, body = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local now = now_ms()
local id = redis.call('INCR', P .. 'ids')
local m = string.format('%020d', id)
local st, due = 'r', 0
if delay > 0 then st, due = 'd', now + delay end
redis.call('HSET', jk(m), 'tube', tube, 'pri', pri, 'ttr', ttr, 'body', body, 'ct', S(now),
           'dl', S(delay), 'st', st, 'due', S(due), 'tok', 0, 'res', 0, 'to', 0, 'rel', 0,
           'bur', 0, 'kck', 0)
if delay > 0 then
  redis.call('ZADD', tk(tube, 'd'), S(due), m)
  redis.call('ZADD', P .. 'timers', S(due), m)
else
  redis.call('ZADD', tk(tube, 'r'), pri, m)
end
if redis.call('HINCRBY', tk(tube, 's'), 'total', 1) == 1 then
  redis.call('SADD', P .. 'tubes', tube)  -- a new tube (a dropped one starts again at 1)
end
publish(tube, delay > 0 and due or now)
return {id, now}
)LUA");
}

std::string reserve() {
  return with_prologue(R"LUA(
local n = tonumber(ARGV[2])
local now = now_ms()
local woke = promote_quietly(now, MAXP)
local best, best_pri, best_tube, nxt = nil, nil, nil, nil
local pus = {}
local function consider(t) if nxt == nil or t < nxt then nxt = t end end
-- when the next job of these tubes may come due (read only when needed, to save commands)
local function next_due()
  for i = 1, n do
    local tube = ARGV[2 + i]
    local d = redis.call('ZRANGE', tk(tube, 'd'), 0, 0, 'WITHSCORES')
    if d[2] then consider(math.max(tonumber(d[2]), pus[i])) end
    local x = redis.call('ZRANGE', tk(tube, 'x'), 0, 0, 'WITHSCORES')
    if x[2] then consider(math.max(tonumber(x[2]), pus[i])) end
  end
  return nxt or -1
end
for i = 1, n do
  local tube = ARGV[2 + i]
  local pu = tonumber(redis.call('HGET', tk(tube, 's'), 'pu') or '0')
  pus[i] = pu
  if n == 1 and pu <= now then
    local top = redis.call('ZPOPMIN', tk(tube, 'r'))  -- one tube: take its best at once
    if top[1] then best, best_tube = top[1], tube end
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
  if n > 1 then redis.call('ZREM', tk(best_tube, 'r'), best) end
  local r = claim(best, best_tube, now)
  r[7] = redis.call('ZCARD', tk(best_tube, 'r'))
  r[8] = best_tube
  r[9] = r.due
  -- one tube left without ready jobs: say when the next comes due, so that the node's other
  -- waiters for this tube wait for that instead of each running a claim that finds nothing
  if n == 1 and r[7] == 0 then r[10] = next_due() end
  -- the claimed tube's event would only send other waiters to find it empty
  if r[7] == 0 then woke[best_tube] = nil end
  announce(woke, now)
  return r
end
announce(woke, now)
return {0, now, next_due()}
)LUA");
}

std::string reserve_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job('st', 'tube')
if not j[1] or j[1] == 'x' then return {0, now} end
take_out(m, j[1], j[2])
return claim(m, j[2], now)
)LUA");
}

std::string remove() {
  return with_prologue(R"LUA(
local m, tok = ARGV[2], ARGV[3]
local j = redis.call('HMGET', jk(m), 'st', 'tube', 'tok', 'due')
if not j[1] then return {0, 0} end
local st, now = j[1], 0
-- Only a lease needs the clock: one that ran out times out first (counted, as beanstalkd does),
-- and then anyone may delete the job; else only its holder may. A delay that ended or not, the
-- job goes either way, so it is not settled.
if st == 'x' then
  now = now_ms()
  if tonumber(j[4]) <= now then
    expire(m)
    st = 'r'
  elseif not holds(st, j[3], tok) then
    return {0, now}
  end
end
take_out(m, st, j[2])
redis.call('DEL', jk(m))
drop_if_empty(j[2], redis.call('HINCRBY', tk(j[2], 's'), 'del', 1))
return {1, now}
)LUA");
}

std::string release() {
  return with_prologue(R"LUA(
local tok, pri, delay, counted = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local m, now, j = the_job('st', 'tube', 'tok', 'pri')
if not holds(j[1], j[3], tok) then return {0, now} end
if pri == '-1' then pri = j[4] end
take_out(m, 'x', j[2])
if counted == '1' then redis.call('HINCRBY', jk(m), 'rel', 1) end
if delay > 0 then
  local due = now + delay
  redis.call('HSET', jk(m), 'st', 'd', 'due', S(due), 'pri', pri, 'tok', 0, 'dl', S(delay))
  redis.call('ZADD', tk(j[2], 'd'), S(due), m)
  redis.call('ZADD', P .. 'timers', S(due), m)
  publish(j[2], due)
else
  redis.call('HSET', jk(m), 'pri', pri)
  to_ready(m, j[2], pri)
  publish(j[2], now)
end
return {1, now}
)LUA");
}

std::string bury() {
  return with_prologue(R"LUA(
local tok, pri = ARGV[3], ARGV[4]
local m, now, j = the_job('st', 'tube', 'tok')
if not holds(j[1], j[3], tok) then return {0, now} end
take_out(m, 'x', j[2])
local seq = redis.call('INCR', P .. 'bseq')
redis.call('ZADD', tk(j[2], 'b'), S(seq), m)
redis.call('HSET', jk(m), 'st', 'b', 'due', 0, 'pri', pri, 'tok', 0)
redis.call('HINCRBY', jk(m), 'bur', 1)
return {1, now}
)LUA");
}

std::string touch() {
  return with_prologue(R"LUA(
local tok = ARGV[3]
local m, now, j = the_job('st', 'tube', 'tok', 'ttr')
if not holds(j[1], j[3], tok) then return {0, now} end
local lease = now + tonumber(j[4])
redis.call('ZADD', tk(j[2], 'x'), S(lease), m)
redis.call('ZADD', P .. 'timers', S(lease), m)
redis.call('HSET', jk(m), 'due', S(lease))
return {1, lease, now}
)LUA");
}

std::string kick() {
  return with_prologue(R"LUA(
local tube, bound = ARGV[2], tonumber(ARGV[3])
local now = now_ms()
if bound <= 0 then return {0, now} end
promote(now, MAXP)
local from = 'b'
local ms = redis.call('ZRANGE', tk(tube, 'b'), 0, S(bound - 1))
if #ms == 0 then
  from = 'd'
  ms = redis.call('ZRANGE', tk(tube, 'd'), 0, S(bound - 1))
end
for _, m in ipairs(ms) do
  take_out(m, from, tube)
  to_ready(m, tube, redis.call('HGET', jk(m), 'pri'))
  redis.call('HINCRBY', jk(m), 'kck', 1)
end
if #ms > 0 then publish(tube, now) end
return {#ms, now}
)LUA");
}

std::string kick_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job('st', 'tube', 'pri')
if j[1] ~= 'b' and j[1] ~= 'd' then return {0, now} end
take_out(m, j[1], j[2])
to_ready(m, j[2], j[3])
redis.call('HINCRBY', jk(m), 'kck', 1)
publish(j[2], now)
return {1, now}
)LUA");
}

std::string peek() {
  return with_prologue(R"LUA(
local m, _, j = the_job('body')
if not j[1] then return {0} end
return {1, tonumber(m), j[1]}
)LUA");
}

std::string peek_tube() {
  return with_prologue(R"LUA(
local tube, which = ARGV[2], ARGV[3]
promote(now_ms(), MAXP)
local top = redis.call('ZRANGE', tk(tube, which), 0, 0)
if not top[1] then return {0} end
return {1, tonumber(top[1]), redis.call('HGET', jk(top[1]), 'body')}
)LUA");
}

std::string stats_job() {
  return with_prologue(R"LUA(
local m, now, j = the_job('tube', 'st', 'pri', 'ct', 'dl', 'ttr', 'due', 'res', 'to', 'rel',
                          'bur', 'kck')
if not j[1] then return {0} end
local left = 0
if j[2] == 'x' or j[2] == 'd' then left = math.max(0, tonumber(j[7]) - now) end
return {1, j[1], j[2], j[3], S(now - tonumber(j[4])), j[5], j[6], S(left), j[8], j[9], j[10],
        j[11], j[12]}
)LUA");
}

std::string stats_tube() {
  return with_prologue(R"LUA(
local tube, known = ARGV[2], ARGV[3]
local now = now_ms()
promote(now, MAXP)
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
  redis.call('SADD', P .. 'tubes', tube)
end
local until_ms = 0
if delay > 0 then until_ms = now + delay end
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
  local head = redis.call('ZRANGE', P .. 'timers', 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or -1
end
local first = first_timer()
if first >= 0 and first <= now then
  promote(now, limit)
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
