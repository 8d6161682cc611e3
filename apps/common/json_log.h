// SPDX-License-Identifier: Apache-2.0
// --log-format json for the programs: an spdlog formatter that writes one JSON object per
// line, as log shippers (Vector, Fluent Bit, Loki's promtail, ...) expect:
//   {"time":"2026-11-22T23:41:07.123456Z","level":"info","worker":0,"message":"...",
//    "fields":{"logger":"wheel-server","pid":1234}}
// time is ISO-8601 UTC with microseconds; level is spdlog's name (trace ... critical);
// worker is this process's worker index, or "supervisor" (set_log_worker); the message is
// escaped by nlohmann::json (quotes, backslashes, control characters; invalid UTF-8 replaced
// by U+FFFD rather than failing).
#pragma once

#include <spdlog/formatter.h>

#include <memory>
#include <string>

namespace wheel::apps {

// Install with logger->set_formatter(std::make_unique<JsonLogFormatter>()). Each line is
// formatted independently; safe from any thread (spdlog calls it under its sink's lock).
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// Logs `message` at `level` through the default logger with `fields_object` (the text of a JSON
// object, e.g. ServerStats::to_json()) merged into the line's "fields" in --log-format json, so
// that a log shipper gets numbers, not a "key=value" string. In text format the fields are
// written after the message as key=value pairs. A fields text that is not a JSON object is
// logged as the string field "raw". Safe from any thread.
void log_with_fields(spdlog::level::level_enum level, const std::string& message,
                     const std::string& fields_object);

// The "worker" of the following lines of this process: an index, or -1 for "supervisor"
// (the default is 0: a single-process program). Safe from any thread.
void set_log_worker(int worker);

// Makes `program`'s stderr logger the default one and the libraries' "wheel" logger (so they
// log under the program's name), at `level` (an spdlog level name) and in `format` ("text" or
// "json", as --log-format takes them). Stderr: stdout is left to what scripts read.
void install_program_logger(const std::string& program, const std::string& level,
                            const std::string& format);

}  // namespace wheel::apps
