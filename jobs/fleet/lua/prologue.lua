-- SPDX-License-Identifier: Apache-2.0
-- The prologue every script of this folder starts with: each script Redis loads is this text
-- followed by the script's file (redis_scripts.cc, with_prologue). The job records and their
-- write buffer, the index write buffer, promotion and the state changes shared by the commands.
-- MAX_PROMOTE is replaced, before loading, by the C++ bound kMaxPromotePerScript
-- (wheel/jobs/redis_script_limits.h): scripts take no globals.
-- Keys (P = the prefix, ARGV[1] of every script; docs/jobs-fleet.md describes them):
--   P ids, P bseq, P tseq     counters: job ids (INCRBY per batch of puts), bury order, tube
--                             creation order
--   P timeouts                counter: leases that ran out
--   P due                     zset tube -> the tube's first timer: the earliest delay end (its d
--                             zset's head) or lease end (its x zset's head), Redis time
--   P tubes                   set of tube names
--   P ev                      pub/sub channel: "<due ms> <tube>" when a tube gets or will get work
--   P j                       hash: id (zero-padded to 20 digits, as every zset member) -> the
--                             job's record, a msgpack array (fields ST..BODY below)
--   P t:<tube>:r|d|x|b        zsets: ready (score pri; equal scores order by id), delayed (due;
--                             member '<pri, 10 digits>:<id>'), reserved (lease end), buried
--                             (bury order); a job promoted from d to r keeps state 'd' in its
--                             record (its due time past) until a command on it settles it
--   P t:<tube>:a              zset: the ready jobs of r again, scored by when each became ready
--                             (Redis ms: put, kick, release; a delay's or a lease's end), for
--                             the web console's oldest ready age (ZRANGE 0 0: O(log N))
--   P t:<tube>:s              hash: total, del (deletes), pc (pauses), pu (paused until), pms,
--                             seq (creation number: list-tubes' order)
--   P t:<tube>:n              counter: deliveries (jobs reserved from it), for the web console;
--                             kept an hour after the tube is dropped, so that a tube its workers
--                             empty and its producers fill again goes on counting
-- Numbers going back into Redis are formatted with %d: Lua would print large ones as 1e+13.
local P = ARGV[1]
local MAXP = MAX_PROMOTE
local J, DUE_IX = P .. 'j', P .. 'due'
-- A job's record: one msgpack array, field <zero-padded id> of hash P j, so that a batch reads
-- and writes the records of all its jobs with one HMGET and one HSET.
local ST, TUBE, PRI, TTR, CT, DL, DUE, RES, TO, REL, BUR, KCK, BODY =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
-- Redis's clock in ms, truncated: a due time D has passed once D <= now_ms(). A deadline starts
-- from the time rounded up (ends_in), so it never ends before its time on Redis's clock.
local NOW, NOW_UP  -- set by now_ms(): a script that starts a deadline reads the clock first
local function now_ms()
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  NOW, NOW_UP = ms, tonumber(t[2]) % 1000 > 0 and ms + 1 or ms
  return ms
end
local function ends_in(after) return NOW_UP + after end
local function S(x) return string.format('%d', x) end
local function tk(tube, kind) return P .. 't:' .. tube .. ':' .. kind end
-- A tube joins the set of tubes with the next creation number (field seq of its stats hash):
-- list-tubes gives them in that order, as beanstalkd.
local DELIVERIES_KEPT = 3600  -- s: a dropped tube's deliveries counter lives on this long
local function add_tube(tube)
  redis.call('SADD', P .. 'tubes', tube)
  redis.call('PERSIST', tk(tube, 'n'))
  redis.call('HSET', tk(tube, 's'), 'seq', redis.call('INCR', P .. 'tseq'))
end
-- A delayed zset's member carries the job's priority before its id ('<priority, 10 digits>:<id>'),
-- so that promotion moves a due job to ready without reading or rewriting its record: the record
-- of a job promoted so still says 'd', with its due time past, and means ready (settle() writes
-- 'r' when a command on that one job reads it). A delayed job's priority never changes.
local function dmember(m, pri) return string.format('%010d', pri) .. ':' .. m end
local function did(dm) return string.sub(dm, 12) end
local function dpri(dm) return tonumber(string.sub(dm, 1, 10)) end
local function publish(tube, due) redis.call('PUBLISH', P .. 'ev', S(due) .. ' ' .. tube) end
-- A variadic command over a long list, in chunks (unpack takes a few thousand values at most);
-- `step` keeps pairs together. Returns the replies' elements, in order.
local function calln(cmd, key, list, step)
  local out, chunk = {}, 1000 * step
  if #list > 0 and #list <= chunk then  -- one call: its reply as is
    local r = redis.call(cmd, key, unpack(list))
    return type(r) == 'table' and r or out
  end
  for i = 1, #list, chunk do
    local r = redis.call(cmd, key, unpack(list, i, math.min(#list, i + chunk - 1)))
    if type(r) == 'table' then for x = 1, #r do out[#out + 1] = r[x] end end
  end
  return out
end
-- Records read (m -> record, or false: no such job) and the ones to write back at the end.
local REC, DIRTY = {}, {}
local function load_many(ms)
  local want = {}
  for _, m in ipairs(ms) do if REC[m] == nil then want[#want + 1] = m end end
  if #want == 0 then return end
  local vs = calln('HMGET', J, want, 1)
  for i, m in ipairs(want) do REC[m] = vs[i] and cmsgpack.unpack(vs[i]) or false end
end
local function load(m) load_many({m}) return REC[m] end
local function save(m, j) REC[m] = j DIRTY[m] = true end  -- j false: the job is deleted
-- Index changes, the last per (zset, member) wins: one ZREM and one ZADD per zset at the end,
-- or before that zset is read (flush_key).
local IX, TIMEOUTS = {}, 0
local function ix(key, m, score)
  local t = IX[key]
  if not t then t = {} IX[key] = t end
  t[m] = score or false
end
-- Tubes whose delayed or reserved zset changed: flush() sets their entry in the due index (the
-- earliest delay end or lease end of the tube) from those zsets' heads.
local TIMED = {}
local function timer(tube, kind, m, score)
  ix(tk(tube, kind), m, score)
  TIMED[tube] = true
end
-- A job joins (at: when it became ready) or leaves a tube's ready zset and its ready-time zset.
local function ready_in(tube, m, pri, at)
  ix(tk(tube, 'r'), m, pri)
  ix(tk(tube, 'a'), m, at)
end
local function ready_out(tube, m)
  ix(tk(tube, 'r'), m, nil)
  ix(tk(tube, 'a'), m, nil)
end
local function flush_key(key)
  local t = IX[key]
  if not t then return end
  IX[key] = nil
  local add, rem, na, nr = {}, {}, 0, 0
  for m, s in pairs(t) do
    if s then
      add[na + 1], add[na + 2], na = S(s), m, na + 2
    else
      nr = nr + 1
      rem[nr] = m
    end
  end
  if #rem > 0 then calln('ZREM', key, rem, 1) end
  if #add > 0 then calln('ZADD', key, add, 2) end
end
local function flush()
  local keys = {}
  for key in pairs(IX) do keys[#keys + 1] = key end
  for _, key in ipairs(keys) do flush_key(key) end
  for tube in pairs(TIMED) do
    local first = nil
    for _, kind in ipairs({'d', 'x'}) do
      local h = redis.call('ZRANGE', tk(tube, kind), 0, 0, 'WITHSCORES')
      if h[2] and (first == nil or tonumber(h[2]) < first) then first = tonumber(h[2]) end
    end
    if first then redis.call('ZADD', DUE_IX, S(first), tube) else redis.call('ZREM', DUE_IX, tube) end
  end
  TIMED = {}
  local set, del, ns, nd = {}, {}, 0, 0
  for m in pairs(DIRTY) do
    local j = REC[m]
    if j then
      set[ns + 1], set[ns + 2], ns = m, cmsgpack.pack(j), ns + 2
    else
      nd = nd + 1
      del[nd] = m
    end
  end
  DIRTY = {}
  if #set > 0 then calln('HSET', J, set, 2) end
  if #del > 0 then calln('HDEL', J, del, 1) end
  if TIMEOUTS > 0 then redis.call('INCRBY', P .. 'timeouts', TIMEOUTS) TIMEOUTS = 0 end
end
-- every script ends with fin(reply): the buffered writes go out first
local function fin(r) flush() return r end
local function take_out(m, j)
  if j[ST] == 'd' then
    timer(j[TUBE], 'd', dmember(m, j[PRI]), nil)
    ready_out(j[TUBE], m)  -- promoted already, if its due time is past
  elseif j[ST] == 'x' then
    timer(j[TUBE], 'x', m, nil)
  elseif j[ST] == 'r' then
    ready_out(j[TUBE], m)
  else
    ix(tk(j[TUBE], j[ST]), m, nil)
  end
end
-- due: when a delay that ended was due (a ready job keeps it for its delivery lateness), else 0;
-- at: when it became ready (a delay's or a lease's end), else now
local function to_ready(m, j, due, at)
  ready_in(j[TUBE], m, j[PRI], at or NOW)
  j[ST], j[DUE] = 'r', due or 0
  save(m, j)
end
-- the timer of m is due: a delayed job or an expired lease becomes ready; returns its tube
local function expire(m, j)
  local st = j[ST]
  if st ~= 'd' and st ~= 'x' then return nil end
  take_out(m, j)
  local due, at = nil, j[DUE]
  if st == 'd' then
    due = j[DUE]
  else
    j[TO] = j[TO] + 1
    TIMEOUTS = TIMEOUTS + 1
  end
  to_ready(m, j, due, at)
  return j[TUBE]
end
-- every timer due by now (at most limit of them): the due index names the tubes, their delayed
-- and reserved zsets the jobs; returns the set of tubes that got work. A delay that ended moves
-- between the tube's zsets only (its member has the priority); a lease that ran out is counted
-- in the job's record.
local function promote_quietly(now, limit)
  local tubes = redis.call('ZRANGEBYSCORE', DUE_IX, '-inf', S(now), 'LIMIT', 0, limit)
  local leases, count, woke = {}, 0, {}
  for _, tube in ipairs(tubes) do
    for _, kind in ipairs({'d', 'x'}) do
      local left = limit - count
      if left <= 0 then break end
      local key = tk(tube, kind)
      flush_key(key)
      local due = redis.call('ZRANGEBYSCORE', key, '-inf', S(now), 'WITHSCORES', 'LIMIT', 0, left)
      for x = 1, #due, 2 do
        local m = due[x]
        count = count + 1
        timer(tube, kind, m, nil)  -- also a member left without its job
        if kind == 'd' then
          ready_in(tube, did(m), dpri(m), tonumber(due[x + 1]))  -- ready since it was due
          woke[tube] = true
        else
          leases[#leases + 1] = m
        end
      end
    end
  end
  load_many(leases)
  for _, m in ipairs(leases) do
    local j = REC[m]
    if j then
      local tube = expire(m, j)
      if tube then woke[tube] = true end
    end
  end
  return woke
end
local function announce(woke, now)
  for tube in pairs(woke) do publish(tube, now) end
end
-- promote_quietly, then one event per tube that got work
local function promote(now, limit) announce(promote_quietly(now, limit), now) end
-- one job's own timer, if due: what a command on one job sees is never stale
local function settle(m, j, now)
  if (j[ST] == 'd' or j[ST] == 'x') and j[DUE] <= now then publish(expire(m, j), now) end
end
-- the fencing token of a lease is the job's reserve count: it grows with every claim
-- leases job m (record j) from now: appends the claim's five reply values (id, token, body,
-- lease end, delay due) to out and returns the lease end; the caller writes j and the lease
local function lease_out(m, j, now, out)
  local delay_due = j[DUE]
  local lease = ends_in(j[TTR])
  j[ST], j[DUE], j[RES] = 'x', lease, j[RES] + 1
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = tonumber(m), j[RES], j[BODY], lease, delay_due
  return lease
end
-- lease_out through the buffers
local function claim(m, j, now, out)
  local lease = lease_out(m, j, now, out)
  timer(j[TUBE], 'x', m, lease)
  save(m, j)
end
local function holds(j, tok)
  return j and j[ST] == 'x' and j[RES] == tonumber(tok)
end
-- after deletes: drops a tube (not default) whose jobs are all deleted and that is not paused.
-- Jobs never change tube, so its puts (total) equal its deletes exactly when it is empty.
local function drop_if_empty(tube, deleted, clock)
  if tube == 'default' then return end
  local s = redis.call('HMGET', tk(tube, 's'), 'total', 'pu')
  if tonumber(s[1] or '0') > deleted then return end
  if tonumber(s[2] or '0') > clock() then return end
  redis.call('SREM', P .. 'tubes', tube)
  redis.call('DEL', tk(tube, 's'))
  redis.call('EXPIRE', tk(tube, 'n'), DELIVERIES_KEPT)
end
-- the job a command names (ARGV[2]), its own timer settled first: m, now and its record
local function the_job()
  local m = ARGV[2]
  local now = now_ms()
  local j = load(m)
  if j then settle(m, j, now) end
  return m, now, j
end
