// SPDX-License-Identifier: Apache-2.0
// The plain pattern many teams write by hand: a sorted set of due times, the bodies in their own
// keys, and a Lua claim that moves due ids to a lease set. Keys: <q>:delayed (score = due ms),
// <q>:leased (score = lease end ms), <q>:job:<id> (body).
'use strict';

// KEYS: delayed, body key. ARGV: id, due ms, body.
const add = `
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`;

// KEYS: delayed, leased. ARGV: now ms, max jobs, lease ms, body key prefix.
// Returns {ids, bodies} when some are due, else {false, next due ms or false}.
const claim = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {false, first[2] or false}
end
redis.call('ZREM', KEYS[1], unpack(ids))
local lease, keys = {}, {}
local until_ms = tonumber(ARGV[1]) + tonumber(ARGV[3])
for i, id in ipairs(ids) do
  lease[2 * i - 1] = until_ms
  lease[2 * i] = id
  keys[i] = ARGV[4] .. id
end
redis.call('ZADD', KEYS[2], unpack(lease))
return {ids, redis.call('MGET', unpack(keys))}`;

function define(redis, q) {
  redis.defineCommand('plainAdd', { numberOfKeys: 2, lua: add });
  redis.defineCommand('plainClaim', { numberOfKeys: 2, lua: claim });
  return {
    delayed: `${q}:delayed`,
    leased: `${q}:leased`,
    job: (id) => `${q}:job:${id}`,
    jobPrefix: `${q}:job:`,
  };
}

module.exports = { define };
