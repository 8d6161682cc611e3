// SPDX-License-Identifier: Apache-2.0
// Where wheeltimer logs: every library of the project (timer, net, load) and its programs write
// through one spdlog logger named "wheel", never through spdlog's default logger, so a program
// that embeds wheeltimer can redirect, reformat or silence it without touching its own logging.
#pragma once

#include <memory>

namespace spdlog {
class logger;
}

namespace wheel {

// The name under which the logger is registered with spdlog.
inline constexpr const char* kLoggerName = "wheel";

// Returns the logger wheeltimer writes to, never null: the one last given to set_logger();
// else a logger the program registered with spdlog under "wheel" before wheeltimer first logged;
// else one made on first use (coloured, to stderr, spdlog's default pattern) and registered
// under "wheel", so spdlog::set_level() and spdlog::get("wheel") reach it too.
// Silence it with `wheel::logger()->set_level(spdlog::level::off)`. Safe from any thread.
std::shared_ptr<spdlog::logger> logger();

// Makes `logger` the one wheeltimer writes to from now on (messages being logged concurrently
// may still go to the previous one); nullptr goes back to the default described above.
// Safe from any thread.
void set_logger(std::shared_ptr<spdlog::logger> logger);

}  // namespace wheel
