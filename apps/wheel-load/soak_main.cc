// SPDX-License-Identifier: Apache-2.0
// wheel-soak: wheel-server --workers 2 under back-to-back rounds of a mixed wheel-load, then
// checks that nothing grew or leaked and that the server's counters agree with the clients'
// (scripts/soak.sh; CI runs one minute). Option parsing and wiring only; the soak is
// wheel::load::run_soak (load/include/wheel/load/soak.h says what it checks).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "cli_options.h"
#include "json_log.h"
#include "scenario_main.h"
#include "wheel/load/soak.h"
#include "wheel/logger.h"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  wheel::load::SoakOptions options;
  std::chrono::milliseconds round = 30s, tolerance = 3s;
  std::string keep;
  std::string log_level = "warn", log_format = "text";
  const auto add_options = [&](CLI::App& app) {
    wheel::cli::add_existing_file(app, "--server", options.server_path,
                                  "the wheel-server program to soak");
    app.add_option("--minutes", options.minutes, "length of the soak")
        ->check(wheel::cli::integer_range(1, 1440))
        ->capture_default_str();
    wheel::cli::add_duration(app, "--round", &round, "length of each wheel-load round", 2s, 1h);
    wheel::cli::add_duration(app, "--tolerance", &tolerance,
                             "how late an idle close or a DELAYED line may be (generous: a soak "
                             "checks endurance; the tests check timing)",
                             0ms, 1h);
    app.add_option("--rss-slack-pct", options.rss_slack_pct,
                   "how much the server's RSS may grow from the first round to the last, in % "
                   "(plus 4 MiB)")
        ->check(wheel::cli::integer_range(0, 1000))
        ->capture_default_str();
    app.add_option("--keep", keep,
                   "keep the server's logs and the rounds' reports in this directory (default: "
                   "a temporary one, removed when the soak holds)")
        ->type_name(wheel::cli::kTypeFile);
    wheel::cli::add_logging_options(app, log_level, log_format);
  };
  const auto scenario = [&]() -> int {
    options.round = std::chrono::duration_cast<std::chrono::seconds>(round);
    options.tolerance = tolerance;
    wheel::apps::install_program_logger("wheel-soak", log_level, log_format);
    std::error_code ec;
    if (keep.empty()) {
      const auto base = std::filesystem::temp_directory_path(ec) / "wheel-soak-XXXXXX";
      std::string pattern = base.string();
      if (ec || mkdtemp(pattern.data()) == nullptr) {
        std::fprintf(stderr, "wheel-soak: cannot make a temporary directory\n");
        return 1;
      }
      options.dir = pattern;
    } else {
      std::filesystem::create_directories(keep, ec);
      if (ec) {
        std::fprintf(stderr, "wheel-soak: --keep: cannot make '%s': %s\n", keep.c_str(),
                     ec.message().c_str());
        return 2;
      }
      options.dir = keep;
    }
    std::signal(SIGPIPE, SIG_IGN);  // a peer closing while wheel-load writes: EPIPE, counted
    wheel::load::SoakResult result;
    try {
      result = wheel::load::run_soak(options);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + " (logs in " + options.dir + ")");
    }
    std::fprintf(stderr, "soak: figures: %s\n", result.figures.c_str());
    if (!result.failures.empty()) {
      std::fprintf(stderr, "soak: FAILED (logs and reports kept in %s):\n", options.dir.c_str());
      for (const auto& f : result.failures) std::fprintf(stderr, "  - %s\n", f.c_str());
      return 1;
    }
    std::fprintf(stderr, "soak: OK\n");
    if (keep.empty()) std::filesystem::remove_all(options.dir, ec);
    return 0;
  };
  return wheel::apps::scenario_main(argc, argv, "wheel-soak",
                                    "wheel-soak: wheel-server under rounds of a mixed wheel-load; "
                                    "checks memory, descriptors, counters and logs afterwards",
                                    add_options, scenario);
}
