// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs. The Lua scripts of the Redis store, one per command, each atomic on
// the Redis side. ARGV[1] is the key prefix in every script; the rest is listed beside each.
// The layout of the keys and the state machine are described in docs/jobs-fleet.md.
#pragma once

#include <string>

namespace wheel::jobs::redis_scripts {

// The text of each script (the shared prologue included).
// The batch scripts (redis_batches.h), one script for many requests:
std::string put();  // n (tube pri delay_ms ttr_ms body)... -> {first id, now}; ids in order
// k n tube... -> {now, more, tube, next known (0|1), next, claims,
//                 (id, token, body, lease, delay_due)...}: up to k claims (k > 1 only if n = 1)
std::string reserve();
std::string remove();  // n (id token)... -> {now, (1|0)...}
// reserve-job: id -> the reply of reserve, with 0 or 1 claim
std::string reserve_job();
std::string release();    // id token pri(-1 keeps) delay_ms -> {1|0, now}
std::string bury();       // id token pri -> {1|0, now}
std::string touch();      // id token -> {1, lease, now} | {0, now}
std::string kick();       // tube bound -> {count, now}
std::string kick_job();   // id -> {1|0, now}
std::string peek();       // id -> {1,id,body} | {0}
std::string peek_tube();  // tube which(r|d|b) -> {1,id,body} | {0}
std::string
stats_job();  // id -> {1, tube, state, pri, age, delay, ttr, left, res, to, rel, bur, kck}|{0}
std::string stats_tube();  // tube known(0|1) -> {1, urgent, ready, reserved, delayed, buried,
                           //    total, deletes, pauses, pause, pause_left} | {0}
std::string stats();       // -> {urgent, ready, reserved, delayed, buried, timeouts, total, tubes}
std::string pause_tube();  // tube delay_ms known(0|1) -> {1|0, now}
std::string scan();        // limit n tube... -> {now, first_timer|-1, {tube, ready(0|1), next}...}
// redis_scripts_fleet.cc: the scripts of a fleet's own operations.
std::string give_back();  // n (id token)... -> {released, now}

// redis_scripts_prologue.cc: the shared prologue (records, buffered writes, promotion) followed
// by `body`.
std::string with_prologue(const char* body);

}  // namespace wheel::jobs::redis_scripts
