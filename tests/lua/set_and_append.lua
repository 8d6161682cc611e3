-- SPDX-License-Identifier: Apache-2.0
-- Test support (redis_cluster_test.cc): a script with two keys of one slot, run through the
-- cluster client. KEYS: two keys with one hash tag. ARGV: the value. Returns the second key's
-- length after the append.
redis.call('SET', KEYS[1], ARGV[1])
return redis.call('APPEND', KEYS[2], ARGV[1])
