// SPDX-License-Identifier: Apache-2.0
#include "json_log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "wheel/logger.h"

namespace wheel::apps {
namespace {

std::atomic<int> g_worker{0};
std::atomic<bool> g_json{false};  // install_program_logger() chose --log-format json
// The fields of the line being logged by this thread (log_with_fields): spdlog's loggers here
// are synchronous, so the formatter runs on the logging thread, inside the log call.
thread_local const nlohmann::ordered_json* t_fields = nullptr;

std::string iso8601_utc(spdlog::log_clock::time_point t) {
  const auto since_epoch = t.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(since_epoch - seconds).count();
  const std::time_t tt = seconds.count();
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buffer[40];
  const std::size_t n = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buffer + n, sizeof(buffer) - n, ".%06dZ", static_cast<int>(micros));
  return buffer;
}

}  // namespace

void set_log_worker(int worker) {
  g_worker.store(worker, std::memory_order_relaxed);
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  nlohmann::ordered_json line;
  line["time"] = iso8601_utc(msg.time);
  const auto level = spdlog::level::to_string_view(msg.level);
  line["level"] = std::string(level.data(), level.size());
  const int worker = g_worker.load(std::memory_order_relaxed);
  if (worker < 0) {
    line["worker"] = "supervisor";
  } else {
    line["worker"] = worker;
  }
  line["message"] = std::string(msg.payload.data(), msg.payload.size());
  line["fields"] = {{"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
                    {"pid", static_cast<long long>(::getpid())}};
  if (t_fields != nullptr) {
    for (const auto& [key, value] : t_fields->items()) line["fields"][key] = value;
  }
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  dest.append(text.data(), text.data() + text.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

void log_with_fields(spdlog::level::level_enum level, const std::string& message,
                     const std::string& fields_object) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::parse(fields_object, nullptr, false);
  if (fields.is_discarded() || !fields.is_object()) {
    fields = nlohmann::ordered_json{{"raw", fields_object}};
  }
  const auto logger = spdlog::default_logger();
  if (!logger->should_log(level)) return;
  if (!g_json.load(std::memory_order_relaxed)) {
    std::string text = message;
    for (const auto& [key, value] : fields.items()) {
      text += ' ' + key + '=' + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    logger->log(level, text);
    return;
  }
  t_fields = &fields;
  logger->log(level, message);
  t_fields = nullptr;
}

void install_program_logger(const std::string& program, const std::string& level,
                            const std::string& format) {
  auto logger = spdlog::stderr_color_mt(program);
  spdlog::set_default_logger(logger);
  wheel::set_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  if (format == "json") logger->set_formatter(std::make_unique<JsonLogFormatter>());
  g_json.store(format == "json", std::memory_order_relaxed);
}

}  // namespace wheel::apps
