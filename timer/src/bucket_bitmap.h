// SPDX-License-Identifier: Apache-2.0
// Internal. One bit per bucket, set while the bucket holds a timeout, so the worker finds the
// next bucket with work in W/64 word reads instead of visiting every bucket.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace wheel::detail {

class BucketBitmap {
 public:
  explicit BucketBitmap(std::size_t bits) : words_((bits + 63) / 64, 0) {}

  void set(std::size_t bit) { words_[bit / 64] |= std::uint64_t{1} << (bit % 64); }
  void clear(std::size_t bit) { words_[bit / 64] &= ~(std::uint64_t{1} << (bit % 64)); }
  bool test(std::size_t bit) const { return ((words_[bit / 64] >> (bit % 64)) & 1) != 0; }

  // The first set bit in [from, end), if any.
  std::optional<std::size_t> first_set(std::size_t from, std::size_t end) const {
    if (from >= end) return std::nullopt;
    std::size_t word = from / 64;
    std::uint64_t bits = words_[word] & (~std::uint64_t{0} << (from % 64));
    const std::size_t last_word = (end - 1) / 64;
    for (;;) {
      if (bits != 0) {
        const std::size_t bit = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (bit >= end) return std::nullopt;
        return bit;
      }
      if (word == last_word) return std::nullopt;
      bits = words_[++word];
    }
  }

 private:
  std::vector<std::uint64_t> words_;
};

}  // namespace wheel::detail
