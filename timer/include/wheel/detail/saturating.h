// SPDX-License-Identifier: Apache-2.0
// Internal: arithmetic on nanosecond counts that clamps instead of overflowing, shared by the
// timer's deadlines and the benchmark's heap timer.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>

namespace wheel::detail {

// Converts without overflow: durations beyond the range of nanoseconds clamp to its ends.
template <class Rep, class Period>
constexpr std::chrono::nanoseconds saturating_nanoseconds(std::chrono::duration<Rep, Period> d) {
  using std::chrono::nanoseconds;
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if constexpr (std::is_floating_point_v<Rep>) {
    const long double ns =
        static_cast<long double>(d.count()) * Period::num * 1'000'000'000.0L / Period::den;
    if (!(ns == ns)) return nanoseconds::zero();  // NaN
    if (ns >= static_cast<long double>(kMax)) return nanoseconds::max();
    if (ns <= -static_cast<long double>(kMax)) return nanoseconds::min();
    return nanoseconds(static_cast<std::int64_t>(ns));
  } else {
    using ToNanos = std::ratio_divide<Period, std::nano>;
    if constexpr (ToNanos::den == 1 && ToNanos::num > 1) {  // coarser than 1 ns: may overflow
      constexpr auto kLimit = kMax / ToNanos::num;
      if (d.count() > kLimit) return nanoseconds::max();
      if (d.count() < -kLimit) return nanoseconds::min();
    }
    return std::chrono::duration_cast<nanoseconds>(d);
  }
}

// a + b, clamped to the int64 range instead of overflowing.
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return sum;
}

}  // namespace wheel::detail
