// SPDX-License-Identifier: Apache-2.0
// Internal to the apps: CLI11 options for the two value kinds every program has, a duration and
// a whole number within a range. The range and the default are written into --help from the
// same values that check them; out of range exits 2 naming the option (cli_style.h).
// Needs wheel_apps_common (the checks) and wheel_cli_style (CLI11).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "cli_style.h"
#include "duration.h"
#include "option_checks.h"

namespace wheel::cli {

// An option that stores a duration such as 250ms, 30s, 5m, 1h, or 0 in *out, shown as DURATION
// in --help. The caller adds the check, which must refuse every text parse_duration() refuses
// (CLI11 runs it before storing).
inline CLI::Option* add_duration_value(CLI::App& app, const std::string& name,
                                       std::chrono::milliseconds* out, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [out](const std::string& text) { *out = *wheel::apps::parse_duration(text); }, help)
      ->type_name(kTypeDuration);
}

// An option holding a duration within lo ..= hi; its help ends with ", LO to HI (default D)"
// with D the value *out holds when called.
inline CLI::Option* add_duration(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds* out, const std::string& help,
                                 std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
  using wheel::apps::format_duration;
  return add_duration_value(app, name, out,
                            help + ", " + format_duration(lo) + " to " + format_duration(hi) +
                                " (default " + format_duration(*out) + ")")
      ->check(CLI::Validator(
          [lo, hi](std::string& text) { return wheel::apps::check_duration(text, lo, hi); }, ""));
}

// An option holding a whole number within lo ..= hi, checked on its text (a huge value is
// refused, never saturated); its help ends with ", LO to HI (default N)".
template <class T>
CLI::Option* add_count(CLI::App& app, const std::string& name, T* out, const std::string& help,
                       std::uint64_t lo, std::uint64_t hi) {
  return app.add_option(name, *out, help + ", " + std::to_string(lo) + " to " + std::to_string(hi))
      ->type_name(kTypeCount)
      ->check(CLI::Validator(
          [lo, hi](std::string& text) { return wheel::apps::check_whole_number(text, lo, hi); },
          ""))
      ->capture_default_str();
}

}  // namespace wheel::cli
