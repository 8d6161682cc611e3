-- SPDX-License-Identifier: Apache-2.0
-- wheel-jobs-load's delete on a plain Redis delay queue (load/src/jobs_wire.cc): ZREM and HDEL,
-- return how many it removed (1 or 0). KEYS: as redis_put.lua. ARGV: id.
local n = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return n
