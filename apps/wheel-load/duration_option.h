// SPDX-License-Identifier: Apache-2.0
// A duration option for wheel-load's programs (wheel-load, wheel-soak).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "cli_options.h"
#include "duration.h"

namespace wheel::load_app {

// A duration option (500ms, 5s, 2m, 1h, 0) stored in `out`, at most `max`, its default shown by
// CLI11; checked while parsing, so a bad value exits 2 naming the option. (wheel-load's own
// messages; the other programs state a range with wheel::cli::add_duration.)
inline CLI::Option* add_duration(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds* out, const std::string& help,
                                 std::chrono::milliseconds max) {
  using wheel::apps::format_duration;
  using wheel::apps::parse_duration;
  return wheel::cli::add_duration_value(app, name, out, help)
      ->default_str(format_duration(*out))
      ->check(CLI::Validator(
          [max](std::string& text) -> std::string {
            if (const auto parsed = parse_duration(text); parsed && *parsed <= max) return {};
            return "must be a duration such as 500ms, 5s, 2m or 1h (or 0), at most " +
                   format_duration(max) + ", got '" + text + "'";
          },
          ""));
}

}  // namespace wheel::load_app
