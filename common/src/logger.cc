// SPDX-License-Identifier: Apache-2.0
#include "wheel/logger.h"

#include <atomic>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace wheel {
namespace {

// Never destroyed: a timer worker may still log while static objects are being torn down.
std::atomic<std::shared_ptr<spdlog::logger>>& current() {
  static auto* slot = new std::atomic<std::shared_ptr<spdlog::logger>>();
  return *slot;
}

std::mutex& creation_mutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  if (auto found = current().load(std::memory_order_acquire)) return found;
  std::lock_guard lock(creation_mutex());
  if (auto found = current().load(std::memory_order_acquire)) return found;
  std::shared_ptr<spdlog::logger> made = spdlog::get(kLoggerName);
  if (!made) {
    try {
      made = spdlog::stderr_color_mt(kLoggerName);
    } catch (const spdlog::spdlog_ex&) {  // the program registered "wheel" meanwhile
      made = spdlog::get(kLoggerName);
    }
  }
  current().store(made, std::memory_order_release);
  return made;
}

void set_logger(std::shared_ptr<spdlog::logger> logger) {
  std::lock_guard lock(creation_mutex());
  current().store(std::move(logger), std::memory_order_release);
}

}  // namespace wheel
