// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs {
namespace {

constexpr bool is_name_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '+' || c == '/' || c == ';' || c == '.' || c == '$' || c == '_' || c == '(' ||
         c == ')';
}

}  // namespace

bool is_valid_tube_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxTubeNameBytes || name.front() == '-') return false;
  for (const char c : name) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

}  // namespace wheel::jobs
