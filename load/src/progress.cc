// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace wheel::load {

Progress& Progress::operator+=(const Progress& o) {
  elapsed_s = std::max(elapsed_s, o.elapsed_s);
  requested += o.requested;
  connected += o.connected;
  active_open += o.active_open;
  idle_open += o.idle_open;
  closed += o.closed;
  errors += o.errors;
  churn_cycles += o.churn_cycles;
  mix_failures += o.mix_failures;
  return *this;
}

std::string format_progress(const Progress& p) {
  std::string line = fmt::format(
      "wheel-load {:5.1f}s: connected {}/{}, active open {}, idle open {}, closed by server {}, "
      "errors {}",
      p.elapsed_s, p.connected, p.requested, p.active_open, p.idle_open, p.closed, p.errors);
  if (p.churn_cycles > 0 || p.mix_failures > 0) {
    line += fmt::format(", churn cycles {}, mix failures {}", p.churn_cycles, p.mix_failures);
  }
  return line;
}

std::string encode_progress(const Progress& p) {
  return fmt::format("{:.3f} {} {} {} {} {} {} {} {}", p.elapsed_s, p.requested, p.connected,
                     p.active_open, p.idle_open, p.closed, p.errors, p.churn_cycles,
                     p.mix_failures);
}

bool decode_progress(const std::string& text, Progress& p) {
  unsigned long long v[8];
  double elapsed = 0;
  if (std::sscanf(text.c_str(), "%lf %llu %llu %llu %llu %llu %llu %llu %llu", &elapsed, &v[0],
                  &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9) {
    return false;
  }
  p = Progress{elapsed, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  return true;
}

}  // namespace wheel::load
