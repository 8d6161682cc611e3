// SPDX-License-Identifier: Apache-2.0
// Internal to apps/wheel-load: the frame its scenario programs (wheel-soak, wheel-big-load)
// share, so that each main() says only its options and its scenario: the command line in the
// project's style (cli_style.h: --help, --version, plain errors), then the scenario, whose
// exception becomes one line and exit status 1.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "cli_style.h"
#include "wheel/version.h"

namespace wheel::apps {

// Builds the command line of `program` (described by `about`), lets `add_options` add the
// program's options (they store into the caller's variables), parses argv and returns 0 after
// --help or --version, 2 after a bad option (cli_style.h prints why). Otherwise returns what
// `scenario` returns; an exception escaping it is printed as "<program>: <what>" on stderr and
// returns 1. Call from main() only (the thread that parses is the one that runs the scenario).
inline int scenario_main(int argc, char** argv, const char* program, const std::string& about,
                         const std::function<void(CLI::App&)>& add_options,
                         const std::function<int()>& scenario) {
  CLI::App app{about};
  cli::apply_style(app, program, kVersion);
  add_options(app);
  if (const auto status = cli::parse_command_line(app, argc, argv, program)) return *status;
  try {
    return scenario();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace wheel::apps
