-- SPDX-License-Identifier: Apache-2.0
-- stats. ARGV: P  Reply: {urgent, ready, reserved, delayed, buried, timeouts, total, tubes}
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
