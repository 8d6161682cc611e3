-- SPDX-License-Identifier: Apache-2.0
-- Test support (wheel_jobs_fleet_test.cc): the body of a job of the store (prefix wj:), the
-- last field of its record, or nil. ARGV: the job's id, zero-padded to 20 digits.
local v = redis.call('HGET', 'wj:j', ARGV[1])
if not v then return false end
return cmsgpack.unpack(v)[13]
