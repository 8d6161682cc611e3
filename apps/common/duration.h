// SPDX-License-Identifier: Apache-2.0
// Internal to the apps: the command-line duration syntax of wheel-server and wheel-load, an
// integer with a unit (`250ms`, `30s`, `5m`, `1h`) or a bare `0`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace wheel::apps {

// Parses "<digits><unit>" with unit ms, s, m or h, or a bare "0". Returns nullopt for anything
// else: a missing or unknown unit, a sign, a fraction, spaces, or a value that does not fit in
// std::chrono::nanoseconds (about 292 years), so that any consumer may convert it to
// nanoseconds without overflow. Safe from any thread.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// The message for a text parse_duration() rejects: names the expected form.
std::string duration_error(std::string_view text);

// The shortest exact spelling parse_duration() accepts: 0, 1500ms, 30s, 5m, 2h.
// Safe from any thread.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace wheel::apps
