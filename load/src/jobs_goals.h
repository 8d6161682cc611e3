// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::load: the names of the compared server configurations and the goal table of
// issue 19 §4, computed from the medians of the measurements.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wheel::load {

inline constexpr const char* kWheelAlways = "wheel-jobs --fsync always";
inline constexpr const char* kWheelF50 = "wheel-jobs --fsync 50";
inline constexpr const char* kWheelMemory = "wheel-jobs (memory)";
inline constexpr const char* kBeanstalkF0 = "beanstalkd -b -f0";
inline constexpr const char* kBeanstalkF50 = "beanstalkd -b -f50";
inline constexpr const char* kBeanstalkMemory = "beanstalkd (memory)";
inline constexpr const char* kRedisAlways = "redis AOF always";
inline constexpr const char* kRedisEverysec = "redis AOF everysec";

// wheel-jobs' log: bytes of one put record (9-byte header, 42 bytes of fields, the tube name
// "default", the body) and of one segment, for the log-size goal.
inline constexpr double kWheelPutRecordFixedBytes = 9 + 42 + 7;
inline constexpr double kWheelSegmentBytes = 8 << 20;

// {"medians": {metric: {server: median}}, "runs": {metric: {server: [values]}},
//  "goals": [{"metric", "goal", "measured", "met"}]} from the values by metric and server.
// Safe from any thread.
nlohmann::json summarize_goals(
    const std::map<std::string, std::map<std::string, std::vector<double>>>& values,
    std::uint64_t pending, std::uint32_t body_size);

}  // namespace wheel::load
