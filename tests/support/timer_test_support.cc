// SPDX-License-Identifier: Apache-2.0
#include "timer_test_support.h"

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

namespace wheel::testing {

LogCapture::LogCapture()
    : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024)), previous_(wheel::logger()) {
  auto logger = std::make_shared<spdlog::logger>("capture", sink_);
  logger->set_level(spdlog::level::trace);
  wheel::set_logger(logger);
}

LogCapture::~LogCapture() {
  wheel::set_logger(previous_);
}

int LogCapture::count(const std::string& needle, spdlog::level::level_enum level) const {
  int n = 0;
  for (const auto& message : sink_->last_raw()) {
    const std::string text(message.payload.data(), message.payload.size());
    if (message.level >= level && text.find(needle) != std::string::npos) ++n;
  }
  return n;
}

std::optional<int> find_thread(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return std::nullopt;
  std::optional<int> found;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string line;
    std::getline(comm, line);
    if (line == name) found = std::stoi(entry->d_name);
  }
  closedir(dir);
  return found;
}

std::int64_t voluntary_switches(int tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
      return std::stoll(line.substr(line.find(':') + 1));
    }
  }
  return -1;
}

}  // namespace wheel::testing
