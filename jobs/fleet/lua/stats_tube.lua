-- SPDX-License-Identifier: Apache-2.0
-- stats-tube. ARGV: P tube known(0|1)
-- Reply: {1, urgent, ready, reserved, delayed, buried, total, deletes, pauses, pause,
-- pause_left, deliveries, oldest ready age, head ready age} | {0}; an age is ms since the job
-- became ready (-1: no ready job, or one made ready before the store kept ready times): the
-- oldest of the tube's ready jobs, and the one a reserve takes next.
local tube, known = ARGV[2], ARGV[3]
local now = now_ms()
promote(now, MAXP)
flush()
if redis.call('SISMEMBER', P .. 'tubes', tube) == 0 and known ~= '1' then return {0} end
local s = redis.call('HMGET', tk(tube, 's'), 'total', 'del', 'pc', 'pu', 'pms')
local pu = tonumber(s[4] or '0')
local pause, left = 0, 0
if pu > now then pause, left = tonumber(s[5] or '0'), pu - now end
local function age(at) return at and math.max(0, now - tonumber(at)) or -1 end
local oldest = redis.call('ZRANGE', tk(tube, 'a'), 0, 0, 'WITHSCORES')
local head = redis.call('ZRANGE', tk(tube, 'r'), 0, 0)
local head_at = head[1] and redis.call('ZSCORE', tk(tube, 'a'), head[1]) or nil
return {1, redis.call('ZCOUNT', tk(tube, 'r'), '-inf', '(1024'), redis.call('ZCARD', tk(tube, 'r')),
        redis.call('ZCARD', tk(tube, 'x')), redis.call('ZCARD', tk(tube, 'd')),
        redis.call('ZCARD', tk(tube, 'b')), tonumber(s[1] or '0'), tonumber(s[2] or '0'),
        tonumber(s[3] or '0'), pause, left, tonumber(redis.call('GET', tk(tube, 'n')) or '0'),
        age(oldest[2]), age(head_at)}
