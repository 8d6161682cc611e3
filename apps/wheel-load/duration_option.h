// SPDX-License-Identifier: Apache-2.0
// A duration option for wheel-load's programs (wheel-load, wheel-soak).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "cli_style.h"
#include "duration.h"

namespace wheel::load_app {

// A duration option (500ms, 5s, 2m, 1h, 0) stored in `out`, at most `max`; checked while
// parsing, so a bad value exits 2 naming the option.
inline CLI::Option* add_duration(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds* out, const std::string& help,
                                 std::chrono::milliseconds max) {
  using wheel::apps::format_duration;
  using wheel::apps::parse_duration;
  return app
      .add_option_function<std::string>(
          name, [out](const std::string& text) { *out = parse_duration(text).value(); }, help)
      ->type_name(wheel::cli::kTypeDuration)
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
