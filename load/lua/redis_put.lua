-- SPDX-License-Identifier: Apache-2.0
-- wheel-jobs-load's put on a plain Redis delay queue (load/src/jobs_wire.cc): INCR the id
-- counter, ZADD the id to the due-time set, HSET the body, return the id.
-- KEYS: ids counter, due zset, bodies hash. ARGV: due (ms), body.
local id = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], ARGV[1], id)
redis.call('HSET', KEYS[3], id, ARGV[2])
return id
