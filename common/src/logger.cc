// SPDX-License-Identifier: Apache-2.0
#include "wheel/logger.h"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace wheel {
namespace {

// A mutex, not std::atomic<std::shared_ptr>: libstdc++ 12 implements the latter with a lock bit
// that ThreadSanitizer cannot see, so every first log from a second thread read as a race.
// Uncontended, the lock costs about as much as the atomic's own spin.
struct Slot {
  std::mutex mutex;
  std::shared_ptr<spdlog::logger> logger;
};

// Never destroyed: a timer worker may still log while static objects are being torn down.
Slot& slot() {
  static auto* made = new Slot();
  return *made;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  if (s.logger) return s.logger;
  std::shared_ptr<spdlog::logger> made = spdlog::get(kLoggerName);
  if (!made) {
    try {
      made = spdlog::stderr_color_mt(kLoggerName);
    } catch (const spdlog::spdlog_ex&) {  // the program registered "wheel" meanwhile
      made = spdlog::get(kLoggerName);
    }
  }
  s.logger = made;
  return made;
}

void set_logger(std::shared_ptr<spdlog::logger> logger) {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  s.logger = std::move(logger);
}

}  // namespace wheel
