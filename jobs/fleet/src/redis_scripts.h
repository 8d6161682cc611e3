// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs. The Lua scripts of the Redis store, one per command, each atomic on
// the Redis side. Their text is jobs/fleet/lua/<name>.lua, embedded at build time, each after
// the shared prologue.lua (the key layout, the records, promotion). ARGV[1] is the key prefix
// in every script; the rest is listed beside each here and at the top of each file. The layout
// of the keys and the state machine are described in docs/jobs-fleet.md.
#pragma once

#include <string>
#include <vector>

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
                           //    total, deletes, pauses, pause, pause_left, deliveries,
                           //    oldest ready age, head ready age} | {0}
std::string stats();       // -> {urgent, ready, reserved, delayed, buried, timeouts, total, tubes}
std::string pause_tube();  // tube delay_ms known(0|1) -> {1|0, now}
std::string scan();        // limit n tube... -> {now, first_timer|-1, {tube, ready(0|1), next}...}
// The web console's list and search: tube which(r|d|b) scan preview needle limit offset ->
//    {looked, total, (id, pri, size, time_left, preview)...}
std::string list_jobs();
// The web console's move: from to which(r|d|b) n -> {moved, now, first new id | 0}
std::string move();
// The scripts of a fleet's own operations:
std::string give_back();  // n (id token)... -> {released, now}

// Every script as Redis loads it, by its file's name (put.lua, ...): each .lua of
// jobs/fleet/lua but the prologue, on the prologue. For the test that has Redis compile them all.
struct Script {
  std::string name;
  std::string text;
};
std::vector<Script> all();

}  // namespace wheel::jobs::redis_scripts
