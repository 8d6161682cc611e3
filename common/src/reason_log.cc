// SPDX-License-Identifier: Apache-2.0
#include "wheel/reason_log.h"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <utility>

#include "wheel/logger.h"

namespace wheel {

ReasonLog::ReasonLog(std::string prefix, std::span<const std::string_view> names,
                     std::chrono::milliseconds interval)
    : prefix_(std::move(prefix)), names_(names), interval_(interval), causes_(names.size()) {
  if (interval_.count() <= 0) throw std::invalid_argument("ReasonLog: interval must be > 0");
}

bool ReasonLog::note(std::size_t cause, std::string_view message, std::int64_t now_ms) {
  Cause& c = causes_.at(cause);
  ++c.count;
  ++c.unlogged;
  if (!c.logged) {
    logger()->warn("{}: {} [{}]; the same cause is logged again at most every {} s, with a count",
                   prefix_, message, names_[cause], interval_.count() / 1000.0);
  } else if (now_ms - c.last_line >= interval_.count()) {
    logger()->warn("{}: {} [{}] in the last {} s; the latest: {}", prefix_, c.unlogged,
                   names_[cause], (now_ms - c.last_line) / 1000, message);
  } else {
    return false;
  }
  c.logged = true;
  c.last_line = now_ms;
  c.unlogged = 0;
  return true;
}

}  // namespace wheel
