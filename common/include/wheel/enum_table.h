// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs: a short constexpr table from the values of one enum to those of
// another, for the mappings that would otherwise each be a switch of `case A: return B;` (a
// queue outcome to its reply, a refused request to its reply, a journaled change to its
// metrics counter).
#pragma once

#include <cstddef>

namespace wheel {

template <class From, class To>
struct EnumPair {
  From from;
  To to;
};

// The `to` paired with `key` in `table`, or `otherwise` when the table does not list `key`.
// A linear scan: the tables hold a handful of pairs.
template <class From, class To, std::size_t N>
constexpr To map_enum(const EnumPair<From, To> (&table)[N], From key, To otherwise) noexcept {
  for (const EnumPair<From, To>& pair : table) {
    if (pair.from == key) return pair.to;
  }
  return otherwise;
}

}  // namespace wheel
